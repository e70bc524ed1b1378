// The semantic cache as the gateway builds it (semantic-services.ts): the
// real provider router embeds with simulated-embed, the cache's vectors go to
// their own embedded index under <data dir>/semantic-cache/<model>/ (never
// the organization index's <data dir>/vectors), each lookup's embedding is
// recorded as an embeddings usage record of the request's payer under its
// own usage key (call number 0), and a model that is not a catalogue embedding model is
// refused by name (the step then answers a logged miss).
import t from "tap";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../../../core/log.ts";
import { loadConfig } from "../../../gateway/config.ts";
import { createRouter } from "../../../providers/index.ts";
import { UsageMeter, type UsageRecord } from "../../../providers/usage.ts";
import { EmbeddedDataStore } from "../../../tenancy/embedded-data-store.ts";
import { EmbeddedCacheStore } from "../../../gateway/cache/embedded-cache-store.ts";
import { chatCacheKey, type KeyOwner } from "../../../gateway/cache/cache-key.ts";
import { SIMULATED_EMBED_THRESHOLD } from "../../../gateway/cache/semantic-defaults.ts";
import { modelSlug, semanticIndexName } from "../../../gateway/cache/semantic-index.ts";
import { defaultSemanticModel, semanticServices } from "../../../gateway/cache/semantic-services.ts";
import { semanticStep, type SemanticCallRequest } from "../../../gateway/cache/semantic-step.ts";

t.test("built from the shared services: own index directory, billed lookups, a refused model named", async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), "troupe-semantic-services-"));
  const config = loadConfig({ TROUPE_DATA_DIR: dataDir, LOG_LEVEL: "warn" });
  const clock = { now: () => Date.UTC(2030, 2, 3) };
  const router = createRouter(config.providers);
  const records: UsageRecord[] = [];
  const meter = new UsageMeter(router.catalogue, { record: (r) => records.push(r) }, clock.now);
  const store = new EmbeddedDataStore(dataDir, clock);
  const cacheStore = new EmbeddedCacheStore(dataDir, { orgQuotaBytes: 1_000_000, maxEntryBytes: 100_000 }, clock);
  const warnings: string[] = [];
  const owner: KeyOwner = { organization_id: "org-s", project_id: "proj-s", environment_id: "env-s", live: true };
  const services = semanticServices({
    config,
    router,
    store,
    cacheStore,
    clock,
    log: createLogger("warn", {}, (line) => warnings.push(line)),
    indexModel: "simulated-embed",
    meter,
    payerOf: (r) => ({ ...r.owner, api_key_id: "key-1", request_id: "req-1" }),
  });
  t.teardown(async () => {
    await services.close();
    await store.close();
    await cacheStore.close();
    await rm(dataDir, { recursive: true, force: true });
  });
  const settings = { semantic_enabled: true, semantic_threshold: SIMULATED_EMBED_THRESHOLD };
  const request = (): SemanticCallRequest => ({ owner, mode: "use", state: { headers: undefined } });
  const chat = { model: "gpt-4.1-mini", messages: [{ role: "user" as const, content: "Who painted the Mona Lisa?" }] };

  const miss = await semanticStep(services.step, request(), settings, chat, "text");
  t.ok(miss && miss.entry === undefined);
  t.ok(existsSync(join(dataDir, "semantic-cache", "simulated-embed", "vectors")), "the cache's own index directory");
  t.notOk(existsSync(join(dataDir, "vectors")), "the organization index is not touched");
  t.match(records, [{ category: "embeddings", model: "simulated-embed", organization_id: "org-s", project_id: "proj-s", api_key_id: "key-1", usage_key: "req-1#0" }]);
  t.ok((records[0]?.input_tokens ?? 0) > 0, "the embedded text's tokens");

  // The answer stored exactly, the vector beside it: a respelling is then served.
  const key = chatCacheKey(owner, chat, "text");
  const answer = { kind: "chat" as const, result: { content: "Leonardo.", finish_reason: "stop" as const, tool_calls: null, input_tokens: 3, output_tokens: 1, model: "gpt-4.1-mini", provider: "openai" } };
  await cacheStore.put(key, { scope: owner, answer, stored_ms: clock.now(), expires_ms: clock.now() + 60_000 });
  if (miss && miss.entry === undefined) miss.keep(key, answer);
  let hit;
  for (let i = 0; i < 50 && !hit?.entry; i++) {
    hit = await semanticStep(services.step, request(), settings, { ...chat, messages: [{ role: "user", content: "who painted the mona lisa" }] }, "text");
    if (!hit?.entry) await new Promise((r) => setTimeout(r, 20));
  }
  t.equal(hit?.entry?.answer.kind === "chat" && hit.entry.answer.result.content, "Leonardo.");

  t.equal(await semanticStep(services.step, request(), { ...settings, semantic_embedding_model: "gpt-4.1-mini" }, chat, "text"), undefined, "a chat model as the embedding model: a miss");
  t.match(warnings.join(""), /gpt-4\.1-mini is not an embedding model with known dimensions/);
});

t.test("names: lower-case slugs, the Elasticsearch index beside ELASTICSEARCH_INDEX", async (t) => {
  t.equal(modelSlug("Org/Text-Embedding:3*Small"), "org-text-embedding-3-small");
  t.equal(semanticIndexName("troupe-vectors", "text-embedding-3-small"), "troupe-vectors-semantic-cache-text-embedding-3-small");
});

t.test("the default embedding model: EMBEDDING_INDEX_MODEL, else the preference order's first configured", async (t) => {
  const none = loadConfig({ LOG_LEVEL: "warn" });
  t.equal(defaultSemanticModel(none, createRouter(none.providers)), "simulated-embed", "no real provider: the simulated model");
  const named = loadConfig({ LOG_LEVEL: "warn", EMBEDDING_INDEX_MODEL: "simulated-embed", OPENAI_API_KEY: "sk-test" });
  t.equal(defaultSemanticModel(named, createRouter(named.providers)), "simulated-embed", "named wins over a configured provider");
  const openai = loadConfig({ LOG_LEVEL: "warn", OPENAI_API_KEY: "sk-test" });
  t.equal(defaultSemanticModel(openai, createRouter(openai.providers)), "text-embedding-3-small");
});
