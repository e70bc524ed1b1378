// Answers for another socket than the one uWS is delivering wait for the
// check phase (core/uws-delivery.ts): decided by identity alone, so plain
// objects stand in for uWS responses in the first tests; the last one sends
// such an answer through a real uWebSockets.js app.
import t from "tap";
import { request } from "node:http";
import * as uWS from "uWebSockets.js";
import type { HttpResponse } from "uWebSockets.js";
import { deferredWritesDone, delivering, notDelivering, writeWhenCorkable } from "../../core/uws-delivery.ts";
import { ResponseState, writeJson } from "../../gateway/http-io.ts";

const fakeResponse = (): HttpResponse => ({}) as HttpResponse;
const checkPhase = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

t.test("outside any delivery, an answer is written at once", async (t) => {
  await checkPhase();
  const written: string[] = [];
  writeWhenCorkable(fakeResponse(), { aborted: false }, () => written.push("b"));
  t.same(written, ["b"]);
});

t.test("during a's delivery: a's own answer at once, b's in the check phase, then the mark is gone", async (t) => {
  await checkPhase();
  const a = fakeResponse();
  const b = fakeResponse();
  const written: string[] = [];
  delivering(a);
  writeWhenCorkable(a, { aborted: false }, () => written.push("a"));
  writeWhenCorkable(b, { aborted: false }, () => written.push("b"));
  t.same(written, ["a"], "b waits: uWS holds the cork on a");
  await checkPhase();
  t.same(written, ["a", "b"], "b is written in the check phase");
  await new Promise((resolve) => setTimeout(resolve, 1));
  writeWhenCorkable(b, { aborted: false }, () => written.push("b again"));
  t.same(written, ["a", "b", "b again"], "in a later turn of the loop (a timer), b is written at once");
});

t.test("while deliveries go on, the mark is cleared first thing in each check phase", async (t) => {
  await checkPhase();
  await checkPhase();
  delivering(fakeResponse());
  delivering(fakeResponse());
  const written: string[] = [];
  await new Promise<void>((resolve) =>
    setImmediate(() => {
      // This check phase: the clearing ran before this immediate and queued itself for the next one.
      setImmediate(() => {
        writeWhenCorkable(fakeResponse(), { aborted: false }, () => written.push("b"));
        resolve();
      });
      delivering(fakeResponse()); // a delivery after that immediate was queued
    }),
  );
  t.same(written, ["b"], "written at once: the clearing ran before it in the check phase");
});

t.test("a Node socket's callback clears the mark: what it completes is written at once", async (t) => {
  await checkPhase();
  const written: string[] = [];
  delivering(fakeResponse());
  notDelivering();
  writeWhenCorkable(fakeResponse(), { aborted: false }, () => written.push("b"));
  t.same(written, ["b"]);
});

t.test("an answer whose client left while it waited is not written", async (t) => {
  await checkPhase();
  const state = { aborted: false };
  const written: string[] = [];
  delivering(fakeResponse());
  writeWhenCorkable(fakeResponse(), state, () => written.push("b"));
  state.aborted = true;
  await deferredWritesDone();
  t.same(written, [], "uWS forbids touching an aborted response");
});

t.test("a waiting write that throws is reported as a warning, and the process goes on", async (t) => {
  await checkPhase();
  const warnings: Error[] = [];
  const onWarning = (warning: Error) => warnings.push(warning);
  process.on("warning", onWarning);
  t.teardown(() => process.off("warning", onWarning));
  delivering(fakeResponse());
  writeWhenCorkable(fakeResponse(), { aborted: false }, () => {
    throw new Error("Invalid access of closed uWS.HttpResponse");
  });
  await deferredWritesDone();
  await new Promise((resolve) => setImmediate(resolve));
  t.match(warnings, [{ name: "TroupeDeferredWrite", message: "an answer written in the check phase failed: Invalid access of closed uWS.HttpResponse" }]);
});

t.test("deferredWritesDone resolves once every waiting answer is out", async (t) => {
  await checkPhase();
  const written: string[] = [];
  delivering(fakeResponse());
  for (const name of ["b", "c"]) writeWhenCorkable(fakeResponse(), { aborted: false }, () => written.push(name));
  await deferredWritesDone();
  t.same(written, ["b", "c"]);
  let resolved = false;
  void deferredWritesDone().then(() => (resolved = true));
  await Promise.resolve();
  t.ok(resolved, "and at once when none waits (before any check phase)");
});

t.test("through uWebSockets.js: b's answer, written during a's delivery, arrives whole after a's", async (t) => {
  const app = uWS.App();
  let parked: { res: HttpResponse; state: ResponseState } | undefined;
  let bWrittenSynchronously: boolean | undefined;
  app.get("/b", (res) => {
    delivering(res);
    const state = new ResponseState();
    res.onAborted(() => state.markAborted());
    parked = { res, state };
  });
  app.get("/a", (res) => {
    delivering(res);
    const state = new ResponseState();
    res.onAborted(() => state.markAborted());
    const b = parked;
    if (!b) throw new Error("b is not parked");
    let wrote = false;
    const cork = b.res.cork.bind(b.res);
    b.res.cork = (cb) => {
      wrote = true;
      return cork(cb);
    };
    writeJson(b.res, b.state, 200, "req_b", JSON.stringify({ answer: "b" }));
    bWrittenSynchronously = wrote;
    writeJson(res, state, 200, "req_a", JSON.stringify({ answer: "a" }));
  });
  const port = await new Promise<number>((resolve, reject) =>
    app.listen("127.0.0.1", 0, (socket) => (socket ? resolve(uWS.us_socket_local_port(socket)) : reject(new Error("listen failed")))),
  );
  t.teardown(() => app.close());
  const get = (path: string) =>
    new Promise<{ status: number; id: string; body: string }>((resolve, reject) => {
      request({ host: "127.0.0.1", port, path, agent: false }, (response) => {
        let body = "";
        response.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
        response.on("end", () => resolve({ status: response.statusCode ?? 0, id: String(response.headers["x-request-id"]), body }));
      })
        .on("error", reject)
        .end();
    });
  const b = get("/b");
  while (!parked) await new Promise((resolve) => setTimeout(resolve, 5));
  const a = await get("/a");
  t.same(a, { status: 200, id: "req_a", body: '{"answer":"a"}' });
  t.same(await b, { status: 200, id: "req_b", body: '{"answer":"b"}' });
  t.equal(bWrittenSynchronously, false, "b's answer was not written inside a's delivery");
});
