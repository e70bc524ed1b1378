// End-to-end agent cases over HTTP, shared by the embedded run and the
// two-replica Dapr cluster run. `at(i)` is the replica to send through:
// with two replicas, a conversation is created on one and continued on the
// other.
import type { Test } from "tap";
import type { RequestOptions, TestResponse } from "../support/troupe.ts";
import { field, str } from "../support/troupe.ts";
import { waitFor } from "../support/net.ts";

export type Requester = (method: string, path: string, options?: RequestOptions) => Promise<TestResponse>;

export interface AgentTarget {
  at(replica: number): Requester;
  /** Two API keys of two different organizations, both with every scope. */
  keyA: string;
  keyB: string;
}

const lookupTool = {
  name: "lookup",
  description: "Look a value up in the caller's system",
  parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
};

async function create(r: Requester, key: string, body: Record<string, unknown> = {}): Promise<string> {
  const res = await r("POST", "/v1/agents/conversations", { token: key, body: { system_prompt: "You are a test agent.", tools: [lookupTool], ...body } });
  if (res.status !== 201) throw new Error(`create: ${res.status} ${res.text}`);
  return str(res.body, "id");
}

type Msg = { role: string; content: string; tool_calls: { id: string; name: string }[] | null; tool_call_id: string | null };
const messagesOf = (body: unknown): Msg[] => field(body, "messages") as Msg[];

export function agentSuite(t: Test, target: AgentTarget): void {
  const r0 = target.at(0);
  const r1 = target.at(1);

  t.test("plain turn: user message, assistant answer, idle", async (t) => {
    const id = await create(r0, target.keyA);
    const res = await r1("POST", `/v1/agents/conversations/${id}/messages`, { token: target.keyA, body: { content: "say Hello from the agent" } });
    t.equal(res.status, 200, res.text);
    t.match(res.body, { id, status: "idle" });
    const msgs = messagesOf(res.body);
    t.same(msgs.map((m) => m.role), ["user", "assistant"]);
    t.equal(msgs[1]?.content, "Hello from the agent");
    t.type(field(msgs[1], "id"), "string");
    const detail = await r0("GET", `/v1/agents/conversations/${id}`, { token: target.keyA });
    t.same(messagesOf(detail.body).length, 2, "detail shows the full history");
  });

  t.test("remember then search_memory recalls it, and finds an indexed document", async (t) => {
    const doc = await r0("POST", "/v1/embeddings/index", { token: target.keyA, body: { content: "The quarterly report says revenue grew in Lisbon", metadata: { source: "report" } } });
    t.equal(doc.status, 200, doc.text);
    const id = await create(r0, target.keyA);
    const res = await r1("POST", `/v1/agents/conversations/${id}/messages`, {
      token: target.keyA,
      body: { content: "remember: the office cat is called Turing; then search_memory: office cat name; then answer" },
    });
    t.equal(res.status, 200, res.text);
    t.equal(field(res.body, "status"), "idle");
    const msgs = messagesOf(res.body);
    t.same(msgs.map((m) => m.role), ["user", "assistant", "tool", "assistant", "tool", "assistant"]);
    t.equal(msgs[1]?.tool_calls?.[0]?.name, "remember");
    t.equal(msgs[2]?.tool_call_id, msgs[1]?.tool_calls?.[0]?.id, "the tool result answers its call");
    const searchResult = JSON.parse(msgs[4]?.content ?? "{}") as { results: { content: string; metadata: { kind?: string } }[] };
    t.equal(searchResult.results[0]?.content, "the office cat is called Turing", "the memory comes back first");
    t.equal(searchResult.results[0]?.metadata.kind, "memory");
    t.match(msgs[5]?.content, /Turing/, "the final answer uses the recalled memory");
    // The index holds it once the turn has committed (it is stored after the commit), and once.
    const memoryId = (JSON.parse(msgs[2]?.content ?? "{}") as { id?: string }).id;
    const inIndex = async () => {
      const found = await r0("POST", "/v1/embeddings/search", { token: target.keyA, body: { query: "the office cat is called Turing", top_k: 10 } });
      return (field(found.body, "results") as { id: string; content: string; metadata: { conversation_id?: string } }[]).filter((r) => r.content === "the office cat is called Turing");
    };
    await waitFor(async () => (await inIndex()).length > 0, 10_000, "the memory in the index");
    t.same((await inIndex()).map((r) => [r.id, r.metadata.conversation_id]), [[memoryId, id]], "stored once, under the id the tool answered");

    const other = await create(r1, target.keyA);
    const recall = await r0("POST", `/v1/agents/conversations/${other}/messages`, { token: target.keyA, body: { content: "search_memory: revenue in Lisbon; then answer" } });
    const found = JSON.parse(messagesOf(recall.body)[2]?.content ?? "{}") as { results: { content: string }[] };
    t.match(found.results[0]?.content, /revenue grew in Lisbon/, "a document indexed over HTTP is found by the agent");
  });

  t.test("caller tool: requires_action, tool-outputs, then idle", async (t) => {
    const id = await create(r0, target.keyA);
    const first = await r1("POST", `/v1/agents/conversations/${id}/messages`, { token: target.keyA, body: { content: 'call lookup {"q":"order 42"}; then answer' } });
    t.equal(field(first.body, "status"), "requires_action");
    const msgs = messagesOf(first.body);
    const call = msgs[msgs.length - 1]?.tool_calls?.[0];
    t.equal(call?.name, "lookup");
    t.match(call, { arguments: { q: "order 42" } });

    const conflict = await r0("POST", `/v1/agents/conversations/${id}/messages`, { token: target.keyA, body: { content: "hello?" } });
    t.equal(conflict.status, 409, "messages while requires_action are a conflict");
    t.equal(field(conflict.body, "error", "code"), "conflict");

    const missing = await r0("POST", `/v1/agents/conversations/${id}/tool-outputs`, { token: target.keyA, body: { outputs: [] } });
    t.equal(missing.status, 400);
    const unknown = await r0("POST", `/v1/agents/conversations/${id}/tool-outputs`, {
      token: target.keyA,
      body: { outputs: [{ tool_call_id: call?.id ?? "", output: "shipped" }, { tool_call_id: "call_nope", output: "x" }] },
    });
    t.equal(unknown.status, 400, "an unknown id is refused");
    t.match(field(unknown.body, "error", "message"), /call_nope/);
    const duplicate = await r0("POST", `/v1/agents/conversations/${id}/tool-outputs`, {
      token: target.keyA,
      body: { outputs: [{ tool_call_id: call?.id ?? "", output: "a" }, { tool_call_id: call?.id ?? "", output: "b" }] },
    });
    t.equal(duplicate.status, 400, "answering twice is refused");
    t.equal(field((await r0("GET", `/v1/agents/conversations/${id}`, { token: target.keyA })).body, "status"), "requires_action", "refusals change nothing");

    const done = await r1("POST", `/v1/agents/conversations/${id}/tool-outputs`, { token: target.keyA, body: { outputs: [{ tool_call_id: call?.id ?? "", output: "order 42 shipped" }] } });
    t.equal(done.status, 200, done.text);
    t.equal(field(done.body, "status"), "idle");
    const after = messagesOf(done.body);
    t.equal(after[after.length - 2]?.role, "tool");
    t.equal(after[after.length - 2]?.content, "order 42 shipped");
    t.match(after[after.length - 1]?.content, /order 42 shipped/);
    const notPending = await r0("POST", `/v1/agents/conversations/${id}/tool-outputs`, { token: target.keyA, body: { outputs: [{ tool_call_id: call?.id ?? "", output: "again" }] } });
    t.equal(notPending.status, 409, "tool-outputs outside requires_action are a conflict");
  });

  t.test("concurrent messages are serialized, each followed by its own reply", async (t) => {
    const id = await create(r0, target.keyA);
    const n = 6;
    const results = await Promise.all(
      Array.from({ length: n }, (_, i) => (i % 2 ? r1 : r0)("POST", `/v1/agents/conversations/${id}/messages`, { token: target.keyA, body: { content: `say reply ${i}` } })),
    );
    t.ok(results.every((r) => r.status === 200), results.map((r) => r.status).join(","));
    const final = messagesOf((await r0("GET", `/v1/agents/conversations/${id}`, { token: target.keyA })).body);
    t.equal(final.length, 2 * n, "none lost");
    for (let i = 0; i < final.length; i += 2) {
      const user = final[i];
      const reply = final[i + 1];
      t.equal(user?.role, "user");
      t.equal(reply?.role, "assistant");
      t.equal(reply?.content, user?.content.replace(/^say /, ""), "each user message is followed by its own reply");
    }
  });

  t.test("list and detail only within the organization", async (t) => {
    const mine = await create(r0, target.keyA);
    const theirs = await create(r1, target.keyB);
    const listA = await r1("GET", "/v1/agents/conversations?limit=100", { token: target.keyA });
    t.equal(listA.status, 200);
    const idsA = (field(listA.body, "data") as { id: string; message_count: number }[]).map((c) => c.id);
    t.ok(idsA.includes(mine));
    t.notOk(idsA.includes(theirs), "B's conversation is not listed for A");
    t.notOk(listA.text.includes('"messages"'), "summaries carry no messages");
    t.equal((await r0("GET", `/v1/agents/conversations/${theirs}`, { token: target.keyA })).status, 404);
    t.equal((await r0("POST", `/v1/agents/conversations/${theirs}/messages`, { token: target.keyA, body: { content: "hi" } })).status, 404);
    t.equal((await r0("GET", "/v1/agents/conversations/00000000-0000-4000-8000-000000000000", { token: target.keyA })).status, 404);
    t.equal((await r0("GET", "/v1/agents/conversations/not-a-uuid", { token: target.keyA })).status, 404);
  });

  t.test("creation validates tools, model and routing", async (t) => {
    const builtin = await r0("POST", "/v1/agents/conversations", { token: target.keyA, body: { tools: [{ name: "remember", description: "", parameters: {} }] } });
    t.equal(builtin.status, 400);
    t.match(field(builtin.body, "error", "details"), [{ path: "body.tools.0.name" }]);
    const manual = await r0("POST", "/v1/agents/conversations", { token: target.keyA, body: { routing_strategy: "manual", model: null } });
    t.equal(manual.status, 400);
    const unknown = await r0("POST", "/v1/agents/conversations", { token: target.keyA, body: { model: "no-such-model" } });
    t.equal(unknown.status, 400);
    const empty = await r0("POST", "/v1/agents/conversations/00000000-0000-4000-8000-000000000000/messages", { token: target.keyA, body: { content: "" } });
    t.equal(empty.status, 400);
  });
}
