import t from "tap";
import { createCohereAdapter } from "../../providers/cohere/index.ts";
import { ProviderCallError } from "../../providers/errors.ts";
import { startCohereFake } from "../fakes/cohere-fake.ts";

const fake = await startCohereFake({ apiKey: "co-test" });
const adapter = createCohereAdapter({ baseUrl: fake.url, apiKey: "co-test" });
t.teardown(async () => {
  await adapter.close?.();
  await fake.close();
});
const signal = new AbortController().signal;

t.test("embeds with input_type and embedding_types, reads embeddings.float", async (t) => {
  const r = await adapter.embed!({ model: "embed-v4.0", input: ["hello world", "bye"], input_type: "search_query" }, { signal });
  t.equal(r.embeddings.length, 2);
  t.equal(r.dimensions, 1536);
  t.equal(r.provider, "cohere");
  t.equal(r.input_tokens, 3);
  const body = fake.requests[0]!.body as Record<string, unknown>;
  t.equal(body.input_type, "search_query");
  t.same(body.embedding_types, ["float"]);
  t.same(body.texts, ["hello world", "bye"]);
  t.equal(fake.requests[0]!.headers.authorization, "Bearer co-test");
});

t.test("default input_type is search_document; output_dimension passed", async (t) => {
  const r = await adapter.embed!({ model: "embed-v4.0", input: ["x"], dimensions: 256 }, { signal });
  t.equal(r.dimensions, 256);
  t.equal((fake.requests.at(-1)!.body as Record<string, unknown>).input_type, "search_document");
});

t.test("errors", async (t) => {
  fake.faults.queue.push({ kind: "status", status: 503 });
  const e = (await adapter.embed!({ model: "embed-v4.0", input: ["x"] }, { signal }).catch((x: unknown) => x)) as ProviderCallError;
  t.ok(e instanceof ProviderCallError);
  t.equal(e.retryable, true);
});
