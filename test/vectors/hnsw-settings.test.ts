// The VECTOR_HNSW_* settings reach the embedded index's graphs: parsed and
// bounded by core/config.ts, passed by createVectorIndex, and a graph saved
// with them records its M (a graph saved with another M is rebuilt).
import t from "tap";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../gateway/config.ts";
import { createVectorIndex } from "../../vectors/create-vector-index.ts";
import { EmbeddedVectorIndex } from "../../vectors/embedded-vector-index.ts";
import { readGraphSnapshot } from "../../vectors/graph-snapshot.ts";
import { clusteredUnitVectors, row } from "../../bench/lib/vectors-dataset.ts";
import type { VectorRecord } from "../../vectors/vector-index.ts";

const base = { TROUPE_DATA_DIR: "/tmp/unused" };

t.test("the four settings parse, default to the measured graph, and are bounded", async (t) => {
  t.same(loadConfig(base).vectors.hnsw, { fromRows: 20_000, connectivity: 16, expansionAdd: 128, expansionSearch: 128, candidates: 80 });
  const set = loadConfig({ ...base, VECTOR_HNSW_M: "32", VECTOR_HNSW_EF_CONSTRUCTION: "256", VECTOR_HNSW_EF_SEARCH: "256", VECTOR_HNSW_CANDIDATES: "160" });
  t.same(set.vectors.hnsw, { fromRows: 20_000, connectivity: 32, expansionAdd: 256, expansionSearch: 256, candidates: 160 });
  t.throws(() => loadConfig({ ...base, VECTOR_HNSW_M: "3" }), /VECTOR_HNSW_M/);
  t.throws(() => loadConfig({ ...base, VECTOR_HNSW_EF_SEARCH: "lots" }), /VECTOR_HNSW_EF_SEARCH/);
});

t.test("an index made from the configuration builds and saves its graphs with them", async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), "troupe-hnsw-settings-"));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const dimensions = 16;
  const config = loadConfig({ ...base, VECTOR_HNSW_FROM_ROWS: "100", VECTOR_HNSW_M: "8", VECTOR_HNSW_EF_CONSTRUCTION: "40", VECTOR_HNSW_EF_SEARCH: "30", VECTOR_HNSW_CANDIDATES: "20" });
  const index = await createVectorIndex({ ...config.vectors, indexModel: "test-embed" }, { dataDir, dimensions });
  await index.open();
  const data = clusteredUnitVectors(150, dimensions, 5, 1, 3, 4);
  const now = new Date().toISOString();
  const records: VectorRecord[] = Array.from({ length: 150 }, (_, i) => ({
    id: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
    organization_id: "org-a",
    content: `doc ${i}`,
    metadata: { kind: "doc" },
    model: "test-embed",
    vector: row(data, i),
    created_at: now,
  }));
  await index.add(records);
  const found = await index.search("org-a", row(data, 7), 5);
  t.equal(found[0]?.id, records[7]?.id, "a record is its own nearest neighbour");
  if (!(index instanceof EmbeddedVectorIndex)) throw new Error("no ELASTICSEARCH_URL: the embedded index");
  await index.graphsSettled();
  await index.close();
  // The index keys a partition by `k:` and its metadata.kind.
  const saved = readGraphSnapshot(join(dataDir, "vectors", "graphs"), "org-a", "k:doc");
  t.equal(saved?.header.connectivity, 8, "the saved graph records VECTOR_HNSW_M");
  t.equal(saved?.header.count, 150);
});
