// An actor call daprd could not deliver ("failed to invoke target …": the
// address placement names refused it, as when a replica restarted at the
// same address and daprd's cached connection is still backing off) is sent
// again with backoff within 10 s. A method's own error, or any other daprd
// failure, fails at once: the method may have run. Against a real HTTP
// server standing in for daprd's actor API.
import t from "tap";
import { scriptedDaprd, type ScriptedAnswer } from "../../support/scripted-daprd.ts";
import { TroupeError } from "../../../core/errors.ts";

/** What the stand-in answers once the script runs out: the method's output. */
const answered: ScriptedAnswer = [200, '{"answered":true}'];

// daprd 1.18.3's answer, as CI's rolling restart logged it.
const undelivered: ScriptedAnswer = [
  500,
  JSON.stringify({
    errorCode: "ERR_ACTOR_INVOKE_METHOD",
    message:
      'error invoke actor method: failed to invoke target 127.0.0.1:34641 after 5 retries. Error: rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:34641: connect: connection refused"',
  }),
];
// A method that threw: daprd wraps the callback's serialized error in its message.
const methodFailed: ScriptedAnswer = [
  500,
  JSON.stringify({
    errorCode: "ERR_ACTOR_INVOKE_METHOD",
    message: 'error invoke actor method: error from actor service: (500) {"troupeError":{"code":"conflict","name":"TroupeError","message":"the conversation is running"}}',
  }),
];

t.test("a call daprd could not deliver is sent again until it is answered", async (t) => {
  const { client, seen } = await scriptedDaprd(t, [undelivered, undelivered, [200, '{"id":"c1"}']], answered);
  const started = Date.now();
  t.equal(await client.invoke("ConversationActor", "c1", "postMessage", { content: "hi", request_id: "r1" }), '{"id":"c1"}');
  t.equal(seen.length, 3, "three attempts");
  t.ok(seen.every((s) => s === "PUT /v1.0/actors/ConversationActor/c1/method/postMessage"), "all the same call");
  t.ok(Date.now() - started >= 700, "with backoff between attempts (250 + 500 ms)");
});

t.test("a method's own error is not sent again", async (t) => {
  const { client, seen } = await scriptedDaprd(t, [methodFailed], answered);
  const error = await client.invoke("ConversationActor", "c2", "postMessage", { content: "hi" }).catch((e: unknown) => e);
  t.ok(error instanceof TroupeError && error.code === "conflict", "the method's error, rebuilt");
  t.equal(seen.length, 1, "one attempt only");
});

t.test("another daprd failure is not sent again", async (t) => {
  const { client, seen } = await scriptedDaprd(t, [[500, JSON.stringify({ errorCode: "ERR_ACTOR_RUNTIME_NOT_FOUND", message: "actor runtime is not configured" })]], answered);
  const error = await client.invoke("ConversationActor", "c3", "get", undefined).catch((e: unknown) => e);
  t.ok(error instanceof TroupeError && error.code === "service_unavailable", "a 503 naming Dapr");
  t.equal(seen.length, 1, "one attempt only");
});

t.test("an address unreachable past the window fails the call, naming daprd's reason", async (t) => {
  t.setTimeout(20_000);
  const { client, seen } = await scriptedDaprd(t, Array.from({ length: 100 }, () => undelivered), answered);
  const started = Date.now();
  const error = await client.invoke("ConversationActor", "c4", "get", undefined).catch((e: unknown) => e);
  const elapsed = Date.now() - started;
  t.ok(error instanceof TroupeError && error.code === "service_unavailable" && error.message.includes("failed to invoke target"), "the last answer's reason");
  t.ok(elapsed >= 8_000 && elapsed <= 11_000, `gave up after ${elapsed} ms (window 10 s)`);
  t.ok(seen.length >= 5 && seen.length <= 20, `${seen.length} attempts, backoff capped at 1 s`);
});

t.test("an aborted call (the client went away) stops being sent again", async (t) => {
  const { client, seen } = await scriptedDaprd(t, Array.from({ length: 100 }, () => undelivered), answered);
  const gone = new AbortController();
  setTimeout(() => gone.abort(new Error("client closed")), 400);
  const started = Date.now();
  await t.rejects(client.invoke("ConversationActor", "c5", "get", undefined, gone.signal));
  t.ok(Date.now() - started < 1_500, "rejected soon after the abort, not at the end of the window");
  const attempts = seen.length;
  await new Promise((r) => setTimeout(r, 800));
  t.equal(seen.length, attempts, "no attempt after the abort");
});
