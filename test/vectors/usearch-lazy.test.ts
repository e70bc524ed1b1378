// usearch (a native addon) must not load at an embedded start, nor when small
// partitions are indexed: only the first search, or a partition reaching the
// HNSW threshold, loads it (the cold start must not pay for it;
// bench/startup.ts). Checked in
// this process's memory map, so nothing else in this file may import usearch.
import t from "tap";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EmbeddedVectorIndex } from "../../vectors/embedded-vector-index.ts";

const usearchLoaded = (): boolean => readFileSync("/proc/self/maps", "utf8").includes("usearch.node");

t.test("usearch loads at the first search, not at open or on small adds", async (t) => {
  const directory = await mkdtemp(join(tmpdir(), "troupe-lazy-"));
  t.teardown(() => rm(directory, { recursive: true, force: true }));
  const index = new EmbeddedVectorIndex({ directory, model: "m", dimensions: 4, graph: { fromRows: 100 } });
  await index.open();
  const now = new Date().toISOString();
  await index.add(
    Array.from({ length: 50 }, (_, i) => ({ id: randomUUID(), organization_id: "o", content: `${i}`, metadata: {}, model: "m", vector: [1, i, 0, 0], created_at: now })),
  );
  t.notOk(usearchLoaded(), "not loaded after open and 50 adds below the HNSW threshold");
  await index.close();
  const reopened = new EmbeddedVectorIndex({ directory, model: "m", dimensions: 4, graph: { fromRows: 100 } });
  await reopened.open();
  t.notOk(usearchLoaded(), "not loaded by a restart over small partitions");
  await reopened.search("o", [1, 0, 0, 0], 1);
  t.ok(usearchLoaded(), "loaded by the first search");
  await reopened.close();
});
