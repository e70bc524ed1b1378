// A turn delivered twice runs once. Dapr may deliver an actor call again when
// it lost track of the first delivery (a rebalance, a store outage: both seen
// by `npm run chaos`); the second delivery carries the same request id and
// input, so the ConversationActor answers the committed conversation instead
// of appending the message again. Here the repeat comes from a caller reusing
// its X-Request-Id, which reaches the actor the same way.
import t from "tap";
import { signup, startTestTroupe, str } from "../support/troupe.ts";

const troupe = await startTestTroupe();
t.teardown(() => troupe.stop());
const a = await signup(troupe, "repeat");

async function userMessages(id: string): Promise<string[]> {
  const res = await troupe.request("GET", `/v1/agents/conversations/${id}`, { token: a.testKey });
  return (res.body as { messages: { role: string; content: string }[] }).messages.filter((m) => m.role === "user").map((m) => m.content);
}

t.test("the same request id and message: one turn", async (t) => {
  const id = str((await troupe.request("POST", "/v1/agents/conversations", { token: a.testKey, body: {} })).body, "id");
  const send = (requestId: string, content: string) =>
    troupe.request("POST", `/v1/agents/conversations/${id}/messages`, { token: a.testKey, body: { content }, headers: { "x-request-id": requestId } });
  const first = await send("req-repeat-0001", "say once");
  const again = await send("req-repeat-0001", "say once");
  t.equal(first.status, 200);
  t.equal(again.status, 200, "the repeat answers like the first");
  t.same(again.body, first.body, "with the conversation the first committed");
  t.same(await userMessages(id), ["say once"], "the message is in the history once");

  t.equal((await send("req-repeat-0002", "say once")).status, 200, "another request id is another turn");
  t.equal((await send("req-repeat-0001", "say twice")).status, 200, "another message under a reused id is another turn");
  t.same(await userMessages(id), ["say once", "say once", "say twice"]);
});
