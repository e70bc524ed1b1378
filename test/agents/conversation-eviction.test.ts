// Conversations under the embedded host's resident cap, over real HTTP with
// the simulated model: ACTOR_MAX_RESIDENT=50 and 500 conversations, half of
// them left waiting for a tool output (requires_action, a pending tool call).
// At most 50 ConversationActors stay in memory, and a conversation evicted
// and activated again answers exactly as before — its messages, status and
// pending tool calls — and goes on: the tool output is accepted and the
// conversation answers. The host-level guarantees (turn lock, reminders,
// timers) are in test/actors/hosts/embedded-eviction.test.ts.
import t from "tap";
import { CONVERSATION_ACTOR } from "../../actors/conversation/conversation-actor.ts";
import { field, signup, startTestTroupe, str } from "../support/troupe.ts";

t.setTimeout(240_000);

const cap = 50;
const conversations = 500;
const troupe = await startTestTroupe({ ACTOR_MAX_RESIDENT: String(cap), DEFAULT_RATE_LIMIT_PER_MINUTE: "10000000" });
t.teardown(() => troupe.stop());
const key = (await signup(troupe, "eviction")).testKey;

const lookupTool = {
  name: "lookup",
  description: "Look a value up in the caller's system",
  parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
};
/** The id of the tool call the conversation's last message asks for. */
const pendingCall = (body: unknown) => (field(body, "messages") as Array<{ tool_calls: { id: string }[] | null }>).at(-1)?.tool_calls?.[0]?.id;
const resident = () => troupe.services.actors.activeActors().find((c) => c.type === CONVERSATION_ACTOR)?.count ?? 0;

/** 16 requests in flight over `items`, tracking the most ConversationActors resident at once. */
let maxResident = 0;
async function inParallel<T, R>(items: readonly T[], run: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) {
      out[i] = await run(items[i] as T, i);
      maxResident = Math.max(maxResident, resident());
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  return out;
}

t.test(`${conversations} conversations with a resident cap of ${cap}`, async (t) => {
  const ids = await inParallel(Array.from({ length: conversations }), async () => {
    const res = await troupe.request("POST", "/v1/agents/conversations", { token: key, body: { system_prompt: "You are a test agent.", tools: [lookupTool] } });
    if (res.status !== 201) throw new Error(`create: ${res.status} ${res.text}`);
    return str(res.body, "id");
  });
  // Even: a full answer. Odd: a tool call the caller must answer (requires_action).
  const content = (i: number) => (i % 2 === 0 ? `say answer ${i}` : `lookup: q${i}; then answer`);
  const before = await inParallel(ids, async (id, i) => {
    const res = await troupe.request("POST", `/v1/agents/conversations/${id}/messages`, { token: key, body: { content: content(i) } });
    if (res.status !== 200) throw new Error(`message: ${res.status} ${res.text}`);
    return res.body;
  });
  t.equal(field(before[0], "status"), "idle");
  t.equal(field(before[1], "status"), "requires_action");
  t.ok(pendingCall(before[1]), "a pending tool call");

  // Read back after 450 others went through: the first ones were evicted long ago.
  let same = 0;
  await inParallel(ids, async (id, i) => {
    const res = await troupe.request("GET", `/v1/agents/conversations/${id}`, { token: key });
    if (JSON.stringify(res.body) === JSON.stringify(before[i])) same += 1;
    else t.fail(`${id} answered ${res.text.slice(0, 300)}, before eviction ${JSON.stringify(before[i]).slice(0, 300)}`);
  });
  t.equal(same, conversations, "every conversation answers exactly as before its eviction (messages, status, pending tool calls)");

  // The waiting ones take their tool output and answer.
  let answered = 0;
  await inParallel(ids, async (id, i) => {
    if (i % 2 === 0) return;
    // Accepted only if the conversation still knows the call as pending (its state's pending_tool_call_ids).
    const pending = pendingCall(before[i]);
    const res = await troupe.request("POST", `/v1/agents/conversations/${id}/tool-outputs`, { token: key, body: { outputs: [{ tool_call_id: pending, output: `r${i}` }] } });
    if (res.status === 200 && field(res.body, "status") === "idle" && (field(res.body, "messages") as unknown[]).length === 4) answered += 1;
    else t.fail(`${id}: ${res.status} ${res.text.slice(0, 300)}`);
  });
  t.equal(answered, conversations / 2, "every evicted conversation waiting for a tool output takes it and answers");
  t.ok(maxResident <= cap, `at most ${cap} ConversationActors resident at any time (saw ${maxResident})`);
  t.ok(maxResident >= cap - 16, `the cap was reached, so eviction was exercised (saw ${maxResident})`);
});
