// Large embedded partitions are searched through usearch's HNSW graph: recall
// against exact search on the same data, exact distances for what it returns,
// removed and replaced records never returned, organizations isolated, and
// the graph loaded back after a restart instead of rebuilt (caught up on what
// changed after it was saved, rebuilt when its file is unusable). The
// threshold is lowered to 1,000 rows so 2,000 vectors exercise the graph.
import t, { type Test } from "tap";
import { randomUUID } from "node:crypto";
import { cp, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EmbeddedVectorIndex } from "../../vectors/embedded-vector-index.ts";
import type { VectorRecord } from "../../vectors/vector-index.ts";
import { clusteredUnitVectors, exactTopK, recallAtK, row } from "../../bench/lib/vectors-dataset.ts";
import { exactCosineDistance } from "../support/cosine.ts";

const dimensions = 64;
const model = "test-embed";
const count = 2000;
const k = 10;
const data = clusteredUnitVectors(count, dimensions, 20, 1, 7, 8);
const queries = clusteredUnitVectors(60, dimensions, 20, 1, 7, 9);
const ids: string[] = Array.from({ length: count }, () => randomUUID());
const rowById = new Map(ids.map((id, i) => [id, i]));
const graph = { fromRows: 1000 };

function records(organizationId: string, from: number, to: number, kind = "doc"): VectorRecord[] {
  const now = new Date().toISOString();
  return Array.from({ length: to - from }, (_, i) => ({
    id: ids[from + i] as string,
    organization_id: organizationId,
    content: `doc ${from + i}`,
    metadata: { kind },
    model,
    vector: row(data, from + i),
    created_at: now,
  }));
}

async function openIndex(t: Test, directory: string, fromRows = graph.fromRows): Promise<EmbeddedVectorIndex> {
  const index = new EmbeddedVectorIndex({ directory, model, dimensions, graph: { fromRows } });
  await index.open();
  t.teardown(() => index.close());
  return index;
}

async function freshDirectory(t: Test): Promise<string> {
  const directory = await mkdtemp(join(tmpdir(), "troupe-hnsw-"));
  t.teardown(() => rm(directory, { recursive: true, force: true }));
  return directory;
}

/** Mean recall@k of the index's answers for org-a against exact top-k over `truthData` rows. */
async function recallOf(index: EmbeddedVectorIndex, truth: number[][], kind?: string): Promise<number> {
  let sum = 0;
  for (let q = 0; q < queries.count; q++) {
    const results = await index.search("org-a", row(queries, q), k, kind === undefined ? undefined : { metadataKind: kind });
    sum += recallAtK(
      results.map((r) => rowById.get(r.id) ?? -1),
      truth[q] as number[],
      k,
    );
  }
  return sum / queries.count;
}

t.test("a large partition is searched through the graph: recall ≥ 0.95 vs exact, exact distances", async (t) => {
  const index = await openIndex(t, await freshDirectory(t));
  for (let from = 0; from < count; from += 500) await index.add(records("org-a", from, from + 500));
  // The inserts run on the graph thread after add resolves: measure the graph, not the exact scoring of pending rows.
  await index.graphsSettled();
  const truth = exactTopK(data, queries, k);
  const recall = await recallOf(index, truth);
  t.ok(recall >= 0.95, `recall@${k} ${recall.toFixed(4)} ≥ 0.95`);
  t.equal(index.searchStats().approximate, queries.count, "every search went through the graph");
  const { graphCandidates, graphRescored } = index.searchStats();
  t.ok(graphRescored > 0 && graphRescored < graphCandidates, `rescored ${graphRescored} of ${graphCandidates} graph candidates: past the int8 bound the rest could not reach the top ${k}`);
  const results = await index.search("org-a", row(queries, 0), k);
  for (const r of results) {
    const expected = exactCosineDistance(row(queries, 0), row(data, rowById.get(r.id) as number));
    t.ok(Math.abs(r.distance - expected) < 1e-5, "the distance is the exact cosine distance (float32 rescoring)");
  }
  // The same data below the threshold stays exact.
  const exact = await openIndex(t, await freshDirectory(t), count + 1);
  await exact.add(records("org-a", 0, count));
  t.equal(await recallOf(exact, truth), 1, "a partition below the threshold is searched exactly");
  t.equal(exact.searchStats().approximate, 0, "and never through a graph");
});

t.test("removed and replaced records are never returned; another organization is never seen", async (t) => {
  const index = await openIndex(t, await freshDirectory(t));
  await index.add(records("org-a", 0, count));
  // org-b holds the queries themselves: closer to every query than anything of org-a.
  const now = new Date().toISOString();
  const intruders = Array.from({ length: queries.count }, (_, q) => ({
    id: randomUUID(),
    organization_id: "org-b",
    content: "b",
    metadata: { kind: "doc" },
    model,
    vector: row(queries, q),
    created_at: now,
  }));
  await index.add(intruders);
  const intruderIds = new Set<string>(intruders.map((r) => r.id));
  const before = await Promise.all(Array.from({ length: 20 }, (_, q) => index.search("org-a", row(queries, q), k, { metadataKind: "doc" })));
  // Move each query's best hit to another kind (removed from this partition) and
  // give each second-best a far vector (replaced in the graph).
  const moved = new Set(before.map((results) => results[0]?.id as string));
  const replaced = new Set(before.map((results) => results[1]?.id as string).filter((id) => !moved.has(id)));
  const far = Array.from({ length: dimensions }, (_, i) => (i === 0 ? -1 : 0));
  await index.add([
    ...[...moved].map((id) => ({ ...(records("org-a", rowById.get(id) as number, (rowById.get(id) as number) + 1)[0] as VectorRecord), metadata: { kind: "moved" } })),
    ...[...replaced].map((id) => ({ ...(records("org-a", rowById.get(id) as number, (rowById.get(id) as number) + 1)[0] as VectorRecord), vector: far })),
  ]);
  const leaked: string[] = [];
  for (let q = 0; q < queries.count; q++) {
    const results = await index.search("org-a", row(queries, q), k, { metadataKind: "doc" });
    t.equal(results.length, k);
    for (const r of results) {
      if (moved.has(r.id) || intruderIds.has(r.id)) leaked.push(`query ${q}: ${r.id}`);
      if (replaced.has(r.id)) t.ok(r.distance > 0.5, "a replaced record is found only by its new (far) vector");
    }
  }
  t.ok(index.searchStats().approximate >= queries.count, "the searches went through the graph");
  t.same(leaked, [], "no moved record and no other organization's record in any answer");
});

t.test("the graph is saved at close and loaded at open, caught up after a crash, rebuilt when unreadable", async (t) => {
  const directory = await freshDirectory(t);
  const first = new EmbeddedVectorIndex({ directory, model, dimensions, graph });
  await first.open();
  await first.add(records("org-a", 0, 1500));
  const answersBefore = await first.search("org-a", row(queries, 1), k);
  await first.close();
  t.ok((await readdir(join(directory, "graphs"))).some((name) => name.endsWith(".usearch")), "close wrote the graph");

  const second = new EmbeddedVectorIndex({ directory, model, dimensions, graph });
  await second.open();
  t.match(second.graphOpenStats, { loaded: 1, built: 0, caughtUp: 0 }, "the saved graph was loaded, not rebuilt");
  t.same(
    (await second.search("org-a", row(queries, 1), k)).map((r) => r.id),
    answersBefore.map((r) => r.id),
    "the same answers after the restart",
  );
  // Records added after the last save, then a crash: the graph files on disk are
  // the ones saved before the add (put back after close, which saves anew).
  const graphs = join(directory, "graphs");
  await cp(graphs, `${graphs}.before`, { recursive: true });
  await second.add(records("org-a", 1500, count));
  await second.close();
  await rm(graphs, { recursive: true });
  await cp(`${graphs}.before`, graphs, { recursive: true });
  const third = new EmbeddedVectorIndex({ directory, model, dimensions, graph });
  await third.open();
  t.teardown(() => third.close());
  t.match(third.graphOpenStats, { loaded: 1, built: 0, caughtUp: 500 }, "the saved graph was loaded and caught up on 500 records");
  const truth = exactTopK(data, queries, k);
  const recall = await recallOf(third, truth);
  t.ok(recall >= 0.95, `recall@${k} ${recall.toFixed(4)} after catching up`);
  await third.close();

  for (const name of await readdir(join(directory, "graphs"))) {
    if (name.endsWith(".usearch")) await writeFile(join(directory, "graphs", name), "not a graph");
  }
  const fourth = new EmbeddedVectorIndex({ directory, model, dimensions, graph });
  await fourth.open();
  t.teardown(() => fourth.close());
  t.match(fourth.graphOpenStats, { loaded: 0, built: 1 }, "an unreadable graph file is rebuilt from the records");
  t.ok((await recallOf(fourth, truth)) >= 0.95, "and serves");
  t.equal(await fourth.deleteOrganization("org-a"), count);
  t.same(await readdir(join(directory, "graphs")), [], "deleting the organization removes its graph files");
});

t.test("a record added a moment ago is found before the graph thread has inserted it", async (t) => {
  const index = await openIndex(t, await freshDirectory(t));
  await index.add(records("org-a", 0, count));
  await index.graphsSettled();
  const now = new Date().toISOString();
  // Each query itself, stored: the nearest record to it by construction.
  const fresh = Array.from({ length: 20 }, (_, q) => ({
    id: randomUUID(),
    organization_id: "org-a",
    content: `fresh ${q}`,
    metadata: { kind: "doc" },
    model,
    vector: row(queries, q),
    created_at: now,
  }));
  // Stored again (new graph nodes for all 2,000): the graph thread is busy with them when the fresh records arrive.
  await index.add(records("org-a", 0, count));
  await index.add(fresh);
  const missing: string[] = [];
  for (let q = 0; q < fresh.length; q++) {
    const results = await index.search("org-a", row(queries, q), k, { metadataKind: "doc" });
    if (results[0]?.id !== fresh[q]?.id) missing.push(`query ${q}`);
  }
  t.same(missing, [], "every fresh record is the first answer to its own vector");
  t.ok(index.searchStats().approximate >= fresh.length, "through the graph (pending rows scored beside it)");
});

t.test("closing while the graph thread is still building: the close waits for nothing unbounded, the next open serves", async (t) => {
  const directory = await freshDirectory(t);
  const first = new EmbeddedVectorIndex({ directory, model, dimensions, graph });
  await first.open();
  await first.add(records("org-a", 0, count));
  // No graphsSettled: the build is in flight; the save is queued behind it on the graph thread.
  await first.close();
  const second = await openIndex(t, directory);
  t.equal(second.graphOpenStats.loaded + second.graphOpenStats.built, 1, "one graph, loaded or rebuilt");
  await second.graphsSettled();
  const truth = exactTopK(data, queries, k);
  t.ok((await recallOf(second, truth)) >= 0.95, "and it serves after the restart");
  t.ok(second.searchStats().approximate > 0, "through the graph");
});
