// The vector index's embedding model (docs/api/embeddings-and-vector-index.md):
// with EMBEDDING_INDEX_MODEL unset, an index created while OpenAI is
// configured is built with text-embedding-3-small (not the bag-of-words
// simulated-embed), which the index answer names and the OpenAI fake
// receives; an index created before keeps its model when a provider is
// configured later; the setting still names the model when set. Real HTTP.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { startOpenAIFake } from "../fakes/openai-fake.ts";
import { field, signup, startTestTroupe } from "../support/troupe.ts";

t.setTimeout(90_000);
const fake = await startOpenAIFake({ apiKey: "sk-fake" });
t.teardown(() => fake.close());
const openai = { OPENAI_API_KEY: "sk-fake", OPENAI_BASE_URL: `${fake.url}/v1` };
const embeddingCalls = () => fake.requests.filter((r) => r.path.endsWith("/embeddings")).map((r) => (r.body as { model?: string }).model);

async function indexAndSearch(troupe: Awaited<ReturnType<typeof startTestTroupe>>, label: string) {
  const user = await signup(troupe, label);
  const added = await troupe.request("POST", "/v1/embeddings/index", { token: user.testKey, body: { content: "lighthouses guide ships at night" } });
  const found = await troupe.request("POST", "/v1/embeddings/search", { token: user.testKey, body: { query: "what guides ships?", top_k: 1 } });
  return { added, found };
}

t.test("OpenAI configured: a new index is built with text-embedding-3-small", async (t) => {
  const troupe = await startTestTroupe(openai);
  t.teardown(() => troupe.stop());
  const before = embeddingCalls().length;
  const { added, found } = await indexAndSearch(troupe, "openai-index");
  t.equal(added.status, 200, added.text);
  t.equal(field(added.body, "model"), "text-embedding-3-small", "the index answer names the model");
  t.equal(field(found.body, "results", 0, "model"), "text-embedding-3-small");
  t.same(embeddingCalls().slice(before), ["text-embedding-3-small", "text-embedding-3-small"], "the add and the search went to OpenAI");
});

t.test("an index created with the simulated model keeps it when OpenAI is configured later", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "troupe-index-model-"));
  const first = await startTestTroupe({ TROUPE_DATA_DIR: dataDir });
  const { added } = await indexAndSearch(first, "kept-1");
  t.equal(field(added.body, "model"), "simulated-embed", "no real provider: the simulated model");
  await first.stop();

  const second = await startTestTroupe({ ...openai, TROUPE_DATA_DIR: dataDir });
  t.teardown(() => second.stop());
  const before = embeddingCalls().length;
  const again = await indexAndSearch(second, "kept-2");
  t.equal(field(again.added.body, "model"), "simulated-embed", "the index keeps the model it was built with");
  t.equal(embeddingCalls().length, before, "nothing sent to OpenAI");
});

t.test("EMBEDDING_INDEX_MODEL still names the model", async (t) => {
  const troupe = await startTestTroupe({ ...openai, EMBEDDING_INDEX_MODEL: "simulated-embed" });
  t.teardown(() => troupe.stop());
  const { added } = await indexAndSearch(troupe, "explicit");
  t.equal(field(added.body, "model"), "simulated-embed");
});
