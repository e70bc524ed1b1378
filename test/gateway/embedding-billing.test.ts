// Embedding calls made for the index and by the agents' memory tools are
// billed like any call: one usage record each, to the calling key, and an
// agent turn's calls get distinct ledger keys under its one request id.
import t from "tap";
import type { UsageRecord } from "../../providers/usage.ts";
import { field, signup, str, startTestTroupe } from "../support/troupe.ts";

t.setTimeout(60_000);
const records: UsageRecord[] = [];
const troupe = await startTestTroupe({}, { usage: { record: (u) => void records.push(u) } });
t.teardown(() => troupe.stop());
const user = await signup(troupe, "embed-billing");

t.test("indexing and searching bill their embedding call", async (t) => {
  const added = await troupe.request("POST", "/v1/embeddings/index", { token: user.testKey, body: { content: "Revenue grew in Lisbon" } });
  t.equal(added.status, 200, added.text);
  const searched = await troupe.request("POST", "/v1/embeddings/search", { token: user.testKey, body: { query: "Lisbon revenue" } });
  t.equal(searched.status, 200, searched.text);
  const mine = records.filter((r) => r.request_id === added.headers.get("x-request-id") || r.request_id === searched.headers.get("x-request-id"));
  t.equal(mine.length, 2);
  t.match(mine, [
    { category: "embeddings", project_id: user.projectId, live: false, cost_nanos: 0, input_tokens: Number },
    { category: "embeddings", project_id: user.projectId },
  ]);
  t.ok(mine[0]!.input_tokens > 0);
});

t.test("an agent turn bills its model calls and its memory tools' embeddings, each under its own key", async (t) => {
  const created = await troupe.request("POST", "/v1/agents/conversations", { token: user.testKey, body: {} });
  const id = str(created.body, "id");
  const res = await troupe.request("POST", `/v1/agents/conversations/${id}/messages`, {
    token: user.testKey,
    body: { content: "remember: the office cat is called Turing; then search_memory: office cat name; then answer" },
  });
  t.equal(res.status, 200, res.text);
  t.equal(field(res.body, "status"), "idle");
  const requestId = res.headers.get("x-request-id");
  const turn = records.filter((r) => r.request_id === requestId);
  t.same(turn.map((r) => r.category).sort(), ["agents", "agents", "agents", "embeddings", "embeddings"], "three model calls, two memory embeddings");
  t.equal(new Set(turn.map((r) => r.usage_key)).size, 5, "five distinct ledger keys");
  t.ok(turn.every((r) => r.usage_key.startsWith(`${requestId}#`)));
});
