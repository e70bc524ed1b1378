// A declared WebSocket route (gateway/ws-route.ts) on a bare uWS app, over
// real sockets: the upgrade completes inside uWS's upgrade callback even
// while admission waits for I/O (uWebSockets.js 20.0.8 can close a socket
// upgraded after an await), the behaviour starts only with what `accept`
// answered, and refusals are HTTP answers when decided in the callback,
// 4000 + status closes after it, with the error in the reason
// (gateway/ws-close.ts), cut to a close frame's 123 bytes.
import t from "tap";
import * as uWS from "uWebSockets.js";
import { TroupeError } from "../../core/errors.ts";
import { createLogger } from "../../core/log.ts";
import type { Admission, AdmissionPolicy, AuthFor } from "../../gateway/admission.ts";
import { defineWsRoute, type AuthMode } from "../../gateway/route.ts";
import { wsCloseFor } from "../../gateway/ws-close.ts";
import { attachWsRoute } from "../../gateway/ws-route.ts";
import { parseResponse, raw } from "./raw-http.ts";

// `x-admit: later` waits for the test to open the gate; `x-admit: refuse` is refused at once; anything else is admitted at once.
let openGate: () => void = () => undefined;
let gate = new Promise<void>((resolve) => (openGate = resolve));
const admission: Admission = {
  admit: <A extends AuthMode>(_policy: AdmissionPolicy<A>, _method: string, headers: Record<string, string>) => {
    const auth = { kind: "none" } as AuthFor<A>;
    if (headers["x-admit"] === "refuse") throw new TroupeError("rate_limited", "slow down");
    if (headers["x-admit"] === "later") return gate.then(() => auth);
    return auth;
  },
};

const events: string[] = [];
const route = defineWsRoute({
  kind: "ws",
  path: "/things/:id",
  summary: "things",
  tag: "test",
  auth: "none",
  accept: async (ctx) => {
    events.push(`accept ${ctx.params.id}`);
    if (ctx.params.id === "missing") throw new TroupeError("not_found", "no such thing");
    return { id: ctx.params.id };
  },
});
const app = uWS.App();
attachWsRoute(app, route, {
  ready: (ws, data) => {
    events.push(`ready ${data.id}`);
    ws.cork(() => ws.send(JSON.stringify(data), false));
  },
  close: (data) => void events.push(`close ${data.id}`),
}, { admission, log: createLogger("silent") });
const port = await new Promise<number>((resolve, reject) =>
  app.listen("127.0.0.1", 0, (socket) => (socket ? resolve(uWS.us_socket_local_port(socket)) : reject(new Error("listen failed")))),
);
t.teardown(() => app.close());

const head = (path: string, extra = "") =>
  `GET ${path} HTTP/1.1\r\nhost: x\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\nx-request-id: req_test_1\r\n${extra}\r\n`;

t.test("admission that waits for I/O: 101 at once, accept and ready once it answered", async (t) => {
  events.length = 0;
  gate = new Promise<void>((resolve) => (openGate = resolve));
  const answered = raw(port, head("/things/a", "x-admit: later\r\n"), 300);
  const early = await answered;
  t.equal(parseResponse(early.text).status, 101, "upgraded while admission still waits");
  t.same(events, [], "accept has not run: admission has not answered");
  // raw() hung up after 300 ms; uWS notices on its next poll.
  await new Promise((resolve) => setTimeout(resolve, 100));
  openGate();
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.same(events, [], "a socket closed before admission answered never reaches accept");

  const ws = new WebSocket(`ws://127.0.0.1:${port}/things/b`);
  const first = await new Promise<string>((resolve, reject) => {
    ws.onmessage = (e) => resolve(String(e.data));
    ws.onerror = () => reject(new Error("websocket failed"));
  });
  t.same(JSON.parse(first), { id: "b" });
  t.same(events, ["accept b", "ready b"]);
  ws.close();
  await new Promise((resolve) => ws.addEventListener("close", resolve));
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.same(events, ["accept b", "ready b", "close b"], "close reaches the behaviour with accept's data");
});

t.test("a refusal decided in the upgrade callback is the HTTP answer", async (t) => {
  events.length = 0;
  const answer = parseResponse((await raw(port, head("/things/a", "x-admit: refuse\r\n"), 300)).text);
  t.equal(answer.status, 429);
  t.match(JSON.parse(answer.body), { error: { code: "rate_limited", message: "slow down", request_id: "req_test_1" } });
  t.same(events, [], "accept never ran");
});

t.test("accept's refusal closes the socket with 4000 + status, the error body's error as the reason", async (t) => {
  events.length = 0;
  const ws = new WebSocket(`ws://127.0.0.1:${port}/things/missing`);
  const frames: string[] = [];
  ws.onmessage = (e) => frames.push(String(e.data));
  const closed = await new Promise<{ code: number; reason: string }>((resolve) => ws.addEventListener("close", (e) => resolve({ code: e.code, reason: e.reason })));
  t.equal(closed.code, 4404);
  t.match(JSON.parse(closed.reason), { code: "not_found", message: "no such thing", request_id: /^req_/ });
  t.same(frames, []);
  t.same(events, ["accept missing"], "neither ready nor close ran");
});

t.test("the close reason fits 123 bytes: the message is cut, a long request id left out", async (t) => {
  const long = new TroupeError("invalid_request", `bad ${"é".repeat(200)}`);
  const cut = wsCloseFor(long, "req_1");
  t.equal(cut.code, 4400);
  t.ok(Buffer.byteLength(cut.reason) <= 123, `${Buffer.byteLength(cut.reason)} bytes`);
  const parsed = JSON.parse(cut.reason) as { code: string; message: string; request_id: string };
  t.equal(parsed.code, "invalid_request");
  t.equal(parsed.request_id, "req_1");
  t.match(parsed.message, /^bad é+…$/);
  const idTooLong = JSON.parse(wsCloseFor(new TroupeError("unauthorized", "no"), "x".repeat(128)).reason) as Record<string, unknown>;
  t.same(idTooLong, { code: "unauthorized", message: "no" }, "a 128-character request id does not fit: left out");
  t.same(JSON.parse(wsCloseFor(new TroupeError("rate_limited", "slow down")).reason), { code: "rate_limited", message: "slow down" });
  t.equal(wsCloseFor(new TroupeError("internal_error")).code, 4500);
});
