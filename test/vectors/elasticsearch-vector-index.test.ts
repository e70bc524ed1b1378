// The shared vector index suite against a real Elasticsearch (ELASTICSEARCH_URL,
// e.g. from `npm run elasticsearch`), plus what only this backend has: the
// mapping it creates, refusal of a foreign index, and a fast service_unavailable
// when the server is unreachable. Every add waits for a refresh (~1 s), hence
// the longer timeout below.
import t from "tap";
import { randomUUID } from "node:crypto";
import { Client } from "@elastic/elasticsearch";
import { loadConfig } from "../../gateway/config.ts";
import { TroupeError } from "../../core/errors.ts";
import { defaultElasticsearchHnsw, defaultNumCandidatesFloor, ElasticsearchVectorIndex, numCandidatesFrom } from "../../vectors/elasticsearch-vector-index.ts";
import { createVectorIndex } from "../../vectors/create-vector-index.ts";
import { defaultVectorLimits } from "../../vectors/vector-index.ts";
import { vectorIndexSuite, type VectorIndexHarness } from "./vector-index-suite.ts";

t.setTimeout(180_000);

const url = process.env["ELASTICSEARCH_URL"];
if (!url) {
  // Never skipped: CI must run this against a real server.
  throw new Error(
    "ELASTICSEARCH_URL is not set: start a server with `npm run elasticsearch` (scripts/elasticsearch.sh) and export the URL it prints",
  );
}

const runPrefix = `troupe-test-${process.pid}-${randomUUID().slice(0, 8)}`;
const admin = new Client({ node: url, requestTimeout: 30_000 });
t.teardown(async () => {
  // Wildcard deletes are refused (action.destructive_requires_name): list, then delete by name.
  const created = Object.keys(await admin.indices.get({ index: `${runPrefix}-*`, allow_no_indices: true }));
  if (created.length > 0) await admin.indices.delete({ index: created });
  await admin.close();
});

/** The index's index.store.preload setting, as Elasticsearch reports it. */
async function preloadOf(index: string): Promise<unknown> {
  const answer = await admin.indices.getSettings({ index, name: "index.store.preload", flat_settings: true });
  const settings: Record<string, unknown> = { ...Object.values(answer)[0]?.settings };
  return settings["index.store.preload"];
}

const harness: VectorIndexHarness = {
  async newLocation(label) {
    return `${runPrefix}-${label}`;
  },
  make: (location, shape) => new ElasticsearchVectorIndex({ url, index: location, ...shape }),
  async cleanup() {
    // The run's indices are deleted together in the file's teardown.
  },
};

t.test("shared suite", async (t) => vectorIndexSuite(t, harness));

t.test("the mapping: float HNSW cosine, keyword org and kind, model in _meta", async (t) => {
  const index = await createVectorIndex(
    { elasticsearchUrl: url, elasticsearchIndex: `${runPrefix}-factory`, indexModel: "simulated-embed", limits: defaultVectorLimits },
    { dataDir: "/nonexistent", dimensions: 8 },
  );
  t.equal(index.backend, "elasticsearch");
  await index.open();
  t.teardown(() => index.close());
  t.same(await preloadOf(`${runPrefix}-factory`), ["vec", "vex", "cfs"], "vectors, graph and small segments are preloaded into the page cache when a segment opens");
  const mapping = await admin.indices.getMapping({ index: `${runPrefix}-factory` });
  const mappings = Object.values(mapping)[0]?.mappings;
  t.match(mappings, {
    _meta: { troupe: { model: "simulated-embed", dimensions: 8 } },
    properties: {
      organization_id: { type: "keyword" },
      kind: { type: "keyword" },
      metadata: { type: "object", enabled: false },
      vector: { type: "dense_vector", dims: 8, similarity: "cosine", index_options: { type: "hnsw" } },
    },
  });
  await index.open();
  t.pass("open() is idempotent");
});

t.test("ELASTICSEARCH_HNSW_* from the configuration reach the mapping Troupe creates", async (t) => {
  const name = `${runPrefix}-configured`;
  const config = loadConfig({
    TROUPE_DATA_DIR: "/tmp/unused",
    ELASTICSEARCH_URL: url,
    ELASTICSEARCH_INDEX: name,
    ELASTICSEARCH_HNSW_M: "24",
    ELASTICSEARCH_HNSW_EF_CONSTRUCTION: "150",
    ELASTICSEARCH_NUM_CANDIDATES: "600",
    ELASTICSEARCH_PRELOAD_VECTORS: "false",
  });
  t.same(config.vectors.elasticsearchHnsw, { m: 24, efConstruction: 150 });
  t.equal(config.vectors.elasticsearchNumCandidates, 600);
  const index = await createVectorIndex({ ...config.vectors, indexModel: "simulated-embed" }, { dataDir: "/nonexistent", dimensions: 8 });
  await index.open();
  t.teardown(() => index.close());
  const mapping = Object.values(await admin.indices.getMapping({ index: name }))[0]?.mappings;
  t.match(mapping, { properties: { vector: { type: "dense_vector", index_options: { type: "hnsw", m: 24, ef_construction: 150 } } } });
  t.equal(await preloadOf(name), undefined, "ELASTICSEARCH_PRELOAD_VECTORS=false: no preload");
  t.ok(index instanceof ElasticsearchVectorIndex);
  if (!(index instanceof ElasticsearchVectorIndex)) return;
  t.equal(index.numCandidates(10), 600, "searches ask for the configured candidates");
  t.equal(index.numCandidates(100), 1_000, "and 10 × top_k above them");
  const found = await index.search("org-none", Array.from({ length: 8 }, (_, i) => (i === 0 ? 1 : 0)), 5);
  t.same(found, [], "ES accepts a search with them (nothing stored)");
});

t.test("num_candidates: the configured floor, 10 × k above it, ES's 10,000 at most", async (t) => {
  const candidates = numCandidatesFrom(600);
  t.equal(candidates(10), 600);
  t.equal(candidates(100), 1_000);
  t.equal(candidates(5_000), 10_000);
  t.throws(() => loadConfig({ TROUPE_DATA_DIR: "/tmp/unused", ELASTICSEARCH_NUM_CANDIDATES: "20000" }), /ELASTICSEARCH_NUM_CANDIDATES/);
  t.throws(() => loadConfig({ TROUPE_DATA_DIR: "/tmp/unused", ELASTICSEARCH_HNSW_M: "1" }), /ELASTICSEARCH_HNSW_M/);
  const defaults = loadConfig({ TROUPE_DATA_DIR: "/tmp/unused" }).vectors;
  t.same(defaults.elasticsearchHnsw, { m: 16, efConstruction: 100 }, "defaults as before");
  t.same(defaults.elasticsearchHnsw, defaultElasticsearchHnsw, "the configuration's defaults are the index's own");
  t.equal(defaults.elasticsearchNumCandidates, defaultNumCandidatesFloor);
});

t.test("an index Troupe did not create is refused", async (t) => {
  const name = `${runPrefix}-foreign`;
  await admin.indices.create({ index: name, mappings: { properties: { title: { type: "text" } } } });
  await t.rejects(new ElasticsearchVectorIndex({ url, index: name, model: "m", dimensions: 8 }).open(), /not created by Troupe/);
});

t.test("an unreachable server is service_unavailable within seconds, never a hang", async (t) => {
  // Port 9 (discard) on loopback: nothing listens there, so connections are refused.
  const index = new ElasticsearchVectorIndex({ url: "http://127.0.0.1:9", index: "x", model: "m", dimensions: 4, requestTimeoutMs: 2_000 });
  const startedMs = Date.now();
  try {
    await index.open();
    t.fail("open() should have failed");
  } catch (error) {
    t.ok(error instanceof TroupeError);
    t.equal((error as TroupeError).code, "service_unavailable");
    t.match((error as Error).message, /^Elasticsearch is unreachable: /);
  }
  t.ok(Date.now() - startedMs < 10_000, "failed fast");
  await index.close();
});

t.test("a server that stops answering mid-request times out as service_unavailable", async (t) => {
  const { createServer } = await import("node:net");
  const sockets = new Set<import("node:net").Socket>();
  // Accepts connections and never answers: the hang a stuck server causes.
  const server = createServer((socket) => sockets.add(socket));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  const index = new ElasticsearchVectorIndex({ url: `http://127.0.0.1:${port}`, index: "x", model: "m", dimensions: 4, requestTimeoutMs: 1_000, maxRetries: 0 });
  const startedMs = Date.now();
  await t.rejects(index.open(), { code: "service_unavailable", message: /Elasticsearch is unreachable: .*timed out/i });
  t.ok(Date.now() - startedMs < 5_000, `gave up after ${Date.now() - startedMs} ms`);
  await index.close();
});
