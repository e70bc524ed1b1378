// Actor state reads and writes ride out a short state-store outage: daprd
// answering 500 (its Redis unreachable) is retried with backoff within 10 s,
// while a 4xx (the request itself is wrong) fails at once. Against a real
// HTTP server standing in for daprd's state API.
import t from "tap";
import { scriptedDaprd, type ScriptedAnswer } from "../../support/scripted-daprd.ts";

const storeDown: ScriptedAnswer = [500, JSON.stringify({ errorCode: "ERR_ACTOR_STATE_TRANSACTION_SAVE", message: "dial tcp: connection refused" })];

t.test("a state write answered 500 twice is retried until it succeeds", async (t) => {
  const { client, seen } = await scriptedDaprd(t, [storeDown, storeDown, [204, ""]]);
  const started = Date.now();
  await client.writeState("ConversationActor", "c1", '{"n":1}');
  t.equal(seen.length, 3, "three attempts");
  t.ok(seen.every((s) => s === "POST /v1.0/actors/ConversationActor/c1/state"), "all the same transactional write");
  t.ok(Date.now() - started >= 300, "with backoff between attempts (100 + 200 ms)");
});

t.test("a state read answered 500 is retried too", async (t) => {
  const { client, seen } = await scriptedDaprd(t, [storeDown, [200, '{"n":2}']]);
  t.same(await client.readState("ConversationActor", "c2"), { n: 2 });
  t.equal(seen.length, 2);
});

t.test("a 400 is not retried", async (t) => {
  const { client, seen } = await scriptedDaprd(t, [[400, JSON.stringify({ errorCode: "ERR_MALFORMED_REQUEST", message: "bad" })]]);
  await t.rejects(client.writeState("ConversationActor", "c3", '{"n":3}'));
  t.equal(seen.length, 1, "one attempt only");
});

t.test("an outage longer than the window fails the write", async (t) => {
  t.setTimeout(20_000);
  const { client, seen } = await scriptedDaprd(t, Array.from({ length: 100 }, () => storeDown));
  const started = Date.now();
  await t.rejects(client.writeState("ConversationActor", "c4", '{"n":4}'));
  const elapsed = Date.now() - started;
  t.ok(elapsed >= 8_000 && elapsed <= 11_000, `gave up after ${elapsed} ms (window 10 s)`);
  t.ok(seen.length >= 5 && seen.length <= 20, `${seen.length} attempts, backoff capped at 1 s`);
});

t.test("an aborted write (the actor was forgotten mid-turn) stops retrying and rejects", async (t) => {
  const { client, seen } = await scriptedDaprd(t, Array.from({ length: 100 }, () => storeDown));
  const evicted = new AbortController();
  setTimeout(() => evicted.abort(new Error("moved")), 250);
  const started = Date.now();
  await t.rejects(client.writeState("ConversationActor", "c5", '{"n":5}', evicted.signal));
  t.ok(Date.now() - started < 1_500, "rejected soon after the abort, not at the end of the window");
  const attempts = seen.length;
  await new Promise((r) => setTimeout(r, 600));
  t.equal(seen.length, attempts, "no attempt after the abort");
});
