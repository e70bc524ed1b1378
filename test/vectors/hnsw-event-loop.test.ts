// Building a partition's HNSW graph must not stall the process: graph inserts
// run on a worker thread (vectors/graph-worker.ts), so while a partition
// crosses the threshold and its graph is built, the event loop keeps turning
// (a 1 ms timer is never late by more than a busy machine's scheduling
// hiccups: up to ~230 ms measured at load 10 on 2 cores, ~75 ms without any graph) and searches
// stay exact for the rows the graph does not hold yet. With the inserts on
// the event loop the build of these 12,000 rows stalled it for seconds.
import t from "tap";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EmbeddedVectorIndex } from "../../vectors/embedded-vector-index.ts";
import { defaultVectorLimits, type VectorRecord } from "../../vectors/vector-index.ts";
import { clusteredUnitVectors, exactTopK, row } from "../../bench/lib/vectors-dataset.ts";

const dimensions = 256;
const count = 12_000;
const fromRows = 10_000;
const batch = 250;
const k = 10;
const data = clusteredUnitVectors(count, dimensions, 30, 1, 7, 11);
const queries = clusteredUnitVectors(20, dimensions, 30, 1, 7, 12);
const ids: string[] = Array.from({ length: count }, () => randomUUID());
const rowById = new Map(ids.map((id, i) => [id, i]));

function records(from: number, to: number): VectorRecord[] {
  const now = new Date().toISOString();
  return Array.from({ length: to - from }, (_, i) => ({
    id: ids[from + i] as string,
    organization_id: "org-a",
    content: `doc ${from + i}`,
    metadata: { kind: "doc" },
    model: "m",
    vector: row(data, from + i),
    created_at: now,
  }));
}

/** The largest lateness of a 1 ms interval timer while `work` runs, in ms. */
async function maxTimerLatenessMs(work: () => Promise<void>): Promise<number> {
  let last = performance.now();
  let worst = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last - 1);
    last = now;
  }, 1);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  return worst;
}

t.test("a partition crossing the HNSW threshold never stalls the event loop; searches stay exact meanwhile", async (t) => {
  const directory = await mkdtemp(join(tmpdir(), "troupe-hnsw-loop-"));
  t.teardown(() => rm(directory, { recursive: true, force: true }));
  const index = new EmbeddedVectorIndex({ directory, model: "m", dimensions, graph: { fromRows } });
  await index.open();
  t.teardown(() => index.close());
  // Below the threshold: no graph yet (and usearch's first load is out of the measurement).
  for (let from = 0; from < fromRows - batch; from += batch) await index.add(records(from, from + batch));
  await index.search("org-a", row(queries, 0), k);

  // The exact answer over the rows held when the partition reaches the threshold.
  const truth = exactTopK({ dimensions, count: fromRows, vectors: data.vectors.subarray(0, fromRows * dimensions) }, queries, k);
  const mismatches: string[] = [];
  const lateness = await maxTimerLatenessMs(async () => {
    for (let from = fromRows - batch; from < count; from += batch) {
      await index.add(records(from, from + batch));
      if (from + batch !== fromRows) continue;
      // The batch that crosses the threshold has just started the build: every
      // search must still see every row, exactly.
      for (let q = 0; q < queries.count; q++) {
        const results = await index.search("org-a", row(queries, q), k, { metadataKind: "doc" });
        const found = results.map((r) => rowById.get(r.id) ?? -1);
        if (found.join() !== (truth[q] as number[]).join()) mismatches.push(`query ${q}: ${found.join()} ≠ ${(truth[q] as number[]).join()}`);
      }
    }
    await index.graphsSettled();
  });
  t.same(mismatches, [], "searches while the first graph is built are exact");
  t.comment(`max 1 ms timer lateness while the graph was built: ${lateness.toFixed(1)} ms`);
  t.ok(lateness < 500, `the event loop never stalled for 500 ms (worst ${lateness.toFixed(1)} ms)`);
  t.ok(index.searchStats().graphInsertMs > 0, "the graph was built");
  const results = await index.search("org-a", row(queries, 0), k, { metadataKind: "doc" });
  t.equal(results.length, k);
  t.ok(index.searchStats().approximate >= 1, "once built, searches go through the graph");
});

t.test("a large batch goes into memory in slices, the event loop turning between them", async (t) => {
  const directory = await mkdtemp(join(tmpdir(), "troupe-apply-slices-"));
  t.teardown(() => rm(directory, { recursive: true, force: true }));
  const index = new EmbeddedVectorIndex({ directory, model: "m", dimensions, graph: { fromRows: count + 1 } });
  await index.open();
  t.teardown(() => index.close());
  // Which event-loop turn each record is applied in: a setImmediate chain counts turns.
  let turn = 0;
  let ticking = true;
  const tick = (): void => {
    turn++;
    if (ticking) setImmediate(tick);
  };
  const turnsApplied = new Set<number>();
  const spied = index as unknown as { applyOne: (...args: unknown[]) => unknown };
  const applyOne = spied.applyOne.bind(index);
  spied.applyOne = (...args: unknown[]) => {
    turnsApplied.add(turn);
    return applyOne(...args);
  };
  setImmediate(tick);
  // 5,000 records of 256 dimensions: tens of milliseconds to apply, many 4 ms slices.
  await index.add(records(0, 5000));
  ticking = false;
  t.equal(index.count("org-a"), 5000, "every record applied");
  t.ok(turnsApplied.size > 1, `applied over ${turnsApplied.size} event-loop turns, not one`);
  const results = await index.search("org-a", row(data, 4999), 1);
  t.equal(results[0]?.id, ids[4999], "the last record of the batch is found");
});

t.test("between slices the quota counts each record once: a concurrent add that fits is taken, one over is refused", async (t) => {
  const directory = await mkdtemp(join(tmpdir(), "troupe-apply-quota-"));
  t.teardown(() => rm(directory, { recursive: true, force: true }));
  const limits = { ...defaultVectorLimits, quotaPerOrganization: 5100 };
  const index = new EmbeddedVectorIndex({ directory, model: "m", dimensions, limits, graph: { fromRows: count + 1 } });
  await index.open();
  t.teardown(() => index.close());
  // Two adds started while the 1,000th record of a 5,000-record batch is applied (a quota check then sees the batch half in memory).
  const spied = index as unknown as { applyOne: (...args: unknown[]) => unknown };
  const applyOne = spied.applyOne.bind(index);
  let applied = 0;
  let during: Array<Promise<string>> = [];
  spied.applyOne = (...args: unknown[]) => {
    if (++applied === 1000) {
      const outcome = (p: Promise<void>): Promise<string> => p.then(() => "added", (error: unknown) => String((error as { code?: string }).code));
      during = [outcome(index.add(records(5000, 5101))), outcome(index.add(records(6000, 6100)))];
    }
    return applyOne(...args);
  };
  await index.add(records(0, 5000));
  t.same(await Promise.all(during), ["quota_exceeded", "added"], "101 more would pass 5,100 and are refused; 100 more fit and are added");
  t.equal(index.count("org-a"), 5100, "exactly the quota is held");
});
