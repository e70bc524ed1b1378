// What a turn itself appends counts against the conversation's caps
// (docs/guides/access-control.md, "How large an agent conversation may
// grow"), over real HTTP against an embedded Troupe: built-in tool results
// and the model's answers, not only the caller's messages. Seven
// search_memory calls of top_k 100 over 32 KB records made a 45 MB
// conversation under the 4 MiB cap. A built-in tool's result is held to
// AGENT_MESSAGE_MAX_BYTES (cut, with a marker), and a turn that reaches the
// conversation cap stops: every tool call answered, an assistant message
// saying why, the stored conversation within the cap.
import t from "tap";
import { field, signup, startTestTroupe, str } from "../support/troupe.ts";

const messageMax = 64 * 1024;
const conversationMax = 256 * 1024;
const troupe = await startTestTroupe({ AGENT_MESSAGE_MAX_BYTES: String(messageMax), AGENT_CONVERSATION_MAX_BYTES: String(conversationMax) });
t.teardown(() => troupe.stop());
const user = await signup(troupe, "turn-caps");
const key = user.testKey;

// 24 records of ~30 KB that every query below finds: one search of top_k 100 returns ~720 KB.
const recordChars = 30_000;
for (let i = 0; i < 24; i++) {
  const content = `record ${i} about the harbour. ${"lorem ipsum harbour tide ".repeat(recordChars / 25)}`.slice(0, recordChars);
  const res = await troupe.request("POST", "/v1/embeddings/index", { token: key, body: { content, metadata: { n: i } } });
  if (res.status !== 200) throw new Error(`index: ${res.status} ${res.text}`);
}

const create = async () => str((await troupe.request("POST", "/v1/agents/conversations", { token: key, body: {} })).body, "id");
const post = (id: string, content: string) => troupe.request("POST", `/v1/agents/conversations/${id}/messages`, { token: key, body: { content } });

interface Message {
  role: string;
  content: string;
  tool_calls: { id: string; name: string }[] | null;
  tool_call_id: string | null;
}

/** The stored size the cap counts: the messages as JSON and the system prompt. */
const storedBytes = (conversation: unknown): number =>
  Buffer.byteLength(String(field(conversation, "system_prompt"))) + Buffer.byteLength(JSON.stringify(field(conversation, "messages")));

t.test("a turn whose search_memory results would pass the cap stops at it", async (t) => {
  const id = await create();
  const search = 'call search_memory {"query":"harbour tide","top_k":100}';
  const res = await post(id, `${Array.from({ length: 7 }, () => search).join("; then ")}; then say done`);
  t.equal(res.status, 200, res.text.slice(0, 300));
  const stored = await troupe.request("GET", `/v1/agents/conversations/${id}`, { token: key });
  const bytes = storedBytes(stored.body);
  t.ok(bytes <= conversationMax, `the stored conversation is ${bytes} bytes, within its cap of ${conversationMax}`);
  t.equal(field(stored.body, "status"), "idle", "the turn ended, not parked");
  const messages = field(stored.body, "messages") as Message[];
  const calls = messages.flatMap((m) => m.tool_calls ?? []);
  const answered = new Set(messages.filter((m) => m.role === "tool").map((m) => m.tool_call_id));
  t.ok(calls.length >= 2, `${calls.length} search calls were made before the cap`);
  t.ok(calls.every((c) => answered.has(c.id)), "every tool call has an answer (a provider refuses a history with an unanswered call)");
  const last = messages.at(-1);
  t.equal(last?.role, "assistant");
  t.match(last?.content, /conversation reached its cap of 262144 bytes/, "the last message says why the turn stopped");
  const notRun = messages.filter((m) => m.role === "tool" && m.content.includes("conversation reached its cap"));
  t.ok(notRun.length >= 1, "the result that did not fit is answered as not added");
  // What room is left stays usable, and no later turn passes the cap either.
  for (let i = 0; i < 3; i++) {
    // Another query each time: the simulated model derives its call ids from the request.
    const more = await post(id, `call search_memory {"query":"harbour tide ${i}","top_k":100}; then say done`);
    if (more.status === 409) {
      t.equal(field(more.body, "error", "code"), "conflict", "a full conversation refuses the next message");
      break;
    }
    t.equal(more.status, 200, more.text.slice(0, 200));
    t.ok(storedBytes(more.body) <= conversationMax, `still within the cap after another turn (${storedBytes(more.body)} bytes)`);
  }
});

t.test("a single search_memory result is bounded by AGENT_MESSAGE_MAX_BYTES, cut with a marker", async (t) => {
  const id = await create();
  const res = await post(id, 'call search_memory {"query":"harbour tide","top_k":100}; then say done');
  t.equal(res.status, 200, res.text.slice(0, 300));
  const messages = field(res.body, "messages") as Message[];
  const tool = messages.find((m) => m.role === "tool");
  t.ok(tool, "the search was answered");
  const bytes = Buffer.byteLength(tool?.content ?? "");
  t.ok(bytes <= messageMax, `the result is ${bytes} bytes, within ${messageMax}`);
  const result = JSON.parse(tool?.content ?? "{}") as { results: { id: string; content: string }[]; truncated?: { omitted_results: number; limit_bytes: number } };
  t.ok(result.results.length >= 1, `${result.results.length} whole records kept, closest first`);
  t.ok(result.results.every((r) => r.content.length === recordChars), "the records kept are whole");
  t.same(result.truncated && { omitted: result.truncated.omitted_results, limit: result.truncated.limit_bytes }, { omitted: 24 - result.results.length, limit: messageMax }, "the marker counts what was left out");
  t.equal(messages.at(-1)?.content, "done", "the turn goes on to the model's answer");
  t.equal(field(res.body, "status"), "idle");
});

t.test("a small top_k is answered whole, without a marker", async (t) => {
  const id = await create();
  const res = await post(id, 'call search_memory {"query":"harbour tide","top_k":1}; then say done');
  const tool = (field(res.body, "messages") as Message[]).find((m) => m.role === "tool");
  const result = JSON.parse(tool?.content ?? "{}") as { results: unknown[]; truncated?: unknown };
  t.equal(result.results.length, 1);
  t.equal(result.truncated, undefined);
});
