// The shared vector index suite against the embedded backend, once with the
// usearch SIMD kernel and once with the plain JS loop, plus what only the
// embedded backend has: the on-disk layout and unreadable stored state.
import t from "tap";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { EmbeddedVectorIndex } from "../../vectors/embedded-vector-index.ts";
import type { ExactSearchKernel } from "../../vectors/embedded-partition.ts";
import { createVectorIndex } from "../../vectors/create-vector-index.ts";
import { defaultVectorLimits } from "../../vectors/vector-index.ts";
import { vectorIndexSuite, type VectorIndexHarness } from "./vector-index-suite.ts";

function harness(kernel: ExactSearchKernel, quantizeFromRows?: number): VectorIndexHarness {
  const roots: string[] = [];
  return {
    async newLocation(label) {
      const dir = await mkdtemp(join(tmpdir(), `troupe-vectors-${label}-`));
      roots.push(dir);
      return dir;
    },
    make: (location, shape) =>
      new EmbeddedVectorIndex({ directory: location, ...shape, kernel, ...(quantizeFromRows === undefined ? {} : { quantizeFromRows }) }),
    async cleanup() {
      for (const dir of roots) await rm(dir, { recursive: true, force: true });
    },
  };
}

t.test("usearch kernel", async (t) => vectorIndexSuite(t, harness("usearch")));
t.test("usearch kernel, int8 candidates + rescoring on every search", async (t) => vectorIndexSuite(t, harness("usearch", 1)));
t.test("js kernel", async (t) => vectorIndexSuite(t, harness("js")));

t.test("factory picks the embedded index under <dataDir>/vectors without ELASTICSEARCH_URL", async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), "troupe-vectors-factory-"));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const index = await createVectorIndex({ elasticsearchUrl: undefined, elasticsearchIndex: "unused", indexModel: "simulated-embed", limits: defaultVectorLimits }, { dataDir, dimensions: 8 });
  t.equal(index.backend, "embedded");
  await index.open();
  await index.add([
    { id: randomUUID(), organization_id: "o", content: "x", metadata: {}, model: "simulated-embed", vector: [1, 0, 0, 0, 0, 0, 0, 0], created_at: new Date().toISOString() },
  ]);
  await index.close();
  const meta = JSON.parse(await readFile(join(dataDir, "vectors", "meta.json"), "utf8"));
  t.match(meta, { model: "simulated-embed", dimensions: 8 });
});

t.test("unreadable stored state is refused at open, not served", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "troupe-vectors-corrupt-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, "meta.json"), JSON.stringify({ model: 42 }));
  await t.rejects(new EmbeddedVectorIndex({ directory: dir, model: "m", dimensions: 4 }).open(), /meta\.json is unreadable/);
});

t.test("use before open is a programming error", async (t) => {
  const index = new EmbeddedVectorIndex({ directory: join(tmpdir(), "never-opened"), model: "m", dimensions: 4 });
  await t.rejects(index.search("o", [1, 0, 0, 0], 1), /not open/);
  t.throws(() => new EmbeddedVectorIndex({ directory: "x", model: "m", dimensions: 0 }), /invalid vector index configuration/);
});

t.test("counts, int8 statistics and a second close", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "troupe-vectors-stats-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const index = new EmbeddedVectorIndex({ directory: dir, model: "m", dimensions: 4, quantizeFromRows: 1 });
  await index.open();
  await index.open();
  const now = new Date().toISOString();
  await index.add([
    { id: randomUUID(), organization_id: "o", content: "a", metadata: { kind: "memory" }, model: "m", vector: [1, 0, 0, 0], created_at: now },
    { id: randomUUID(), organization_id: "o", content: "b", metadata: {}, model: "m", vector: [0, 1, 0, 0], created_at: now },
  ]);
  await index.add([]);
  t.equal(index.count("o"), 2);
  t.equal(index.count("nobody"), 0);
  const [hit] = await index.search("o", [0.9, 0.1, 0, 0], 1);
  t.equal(hit?.content, "a");
  t.match(index.searchStats(), { quantized: 2, fallbacks: 0, approximate: 0 }, "one int8 search per partition (memory, untyped)");
  await index.close();
  await index.close();
  t.pass("closing twice is harmless");
});
