// `npm run bench:vectors`: indexes N clustered 768-dim vectors into each vector
// index backend (embedded always; Elasticsearch when ELASTICSEARCH_URL is set)
// and prints the indexing rate, search p50/p99 over 200 queries and recall@10
// against exact search, beside the targets. Searches are sent open loop at a
// fixed rate (--rate, 50/s): a query's latency counts from when it was due, so
// a slow one delays the next in the figures, as it would a caller.
//
// The embedded index is measured twice on the same stored records: with its
// HNSW graph (partitions from --hnsw-from-rows rows) and with exact search
// only, side by side: recall@10, p50/p99, build time (and the graph's share),
// RSS after the build, restart time (records from LMDB + the saved graph).
//
//   node bench/vectors.ts [--n 100000] [--queries 200] [--dims 768] [--k 10]
//                         [--rate 50] [--hnsw-from-rows 20000] [--candidates 80] [--ef-search 128]
//                         [--ef-sweep 256:160,512:320]  more ef_search:candidates pairs, measured on the saved graph
//                         [--graph-m 16] [--graph-ef-construction 128]  the embedded graph's build parameters
//                         [--batch 500] [--only embedded|elasticsearch]
//                         [--num-candidates 100,200,400]  extra num_candidates to measure on the same ES index
//                         [--m 16] [--ef-construction 100] ES HNSW build parameters
//                         [--keep-index] [--reuse-index NAME]  keep the ES index / measure a kept one again
//                         [--max-segments 1]  force-merge the ES index to this many segments (with --reuse-index:
//                                             merge the kept index down to it first; omitted there, no merge)
//                         [--keep-dir DIR] [--reuse-dir DIR]  build the embedded index in DIR and keep it / measure a kept
//                                                             one again without rebuilding (same --n and --graph-m)
import { randomUUID } from "node:crypto";
import { mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { Client } from "@elastic/elasticsearch";
import { defaultNumCandidatesFloor, ElasticsearchVectorIndex } from "../vectors/elasticsearch-vector-index.ts";
import { EmbeddedVectorIndex } from "../vectors/embedded-vector-index.ts";
import { defaultGraphSettings } from "../vectors/partition-graph.ts";
import { defaultVectorLimits, type VectorIndex, type VectorRecord, type VectorSearchResult } from "../vectors/vector-index.ts";
import { clusteredUnitVectors, exactTopK, recallAtK, row, type Dataset } from "./lib/vectors-dataset.ts";
import { percentile } from "../load/stats.ts";
import { exactCosineDistance } from "../test/support/cosine.ts";

const { values: args } = parseArgs({
  options: {
    n: { type: "string", default: "100000" },
    queries: { type: "string", default: "200" },
    dims: { type: "string", default: "768" },
    k: { type: "string", default: "10" },
    batch: { type: "string", default: "500" },
    only: { type: "string" },
    "keep-index": { type: "boolean", default: false },
    "reuse-index": { type: "string" },
    "keep-dir": { type: "string" },
    "reuse-dir": { type: "string" },
    "num-candidates": { type: "string", default: "" },
    m: { type: "string", default: "16" },
    "ef-construction": { type: "string", default: "100" },
    "max-segments": { type: "string" },
    rate: { type: "string", default: "50" },
    "hnsw-from-rows": { type: "string", default: String(defaultGraphSettings.fromRows) },
    candidates: { type: "string", default: String(defaultGraphSettings.candidates) },
    "ef-search": { type: "string", default: String(defaultGraphSettings.expansionSearch) },
    "ef-sweep": { type: "string", default: "" },
    "graph-m": { type: "string", default: String(defaultGraphSettings.connectivity) },
    "graph-ef-construction": { type: "string", default: String(defaultGraphSettings.expansionAdd) },
  },
});
const n = positiveInt("n", args.n);
// The per-organization quota must not stop a bench corpus larger than the default.
// Twice n: the Elasticsearch half bulk-indexes without waiting for refreshes, and
// its records stay reserved until the bench's one refresh while Elasticsearch's
// own refreshes already count them as stored (the quota errs strict, never loose).
const limits = { ...defaultVectorLimits, quotaPerOrganization: Math.max(defaultVectorLimits.quotaPerOrganization, 2 * n) };
const queryCount = positiveInt("queries", args.queries);
const dimensions = positiveInt("dims", args.dims);
const k = positiveInt("k", args.k);
const batchSize = positiveInt("batch", args.batch);
const hnsw = { m: positiveInt("m", args.m), efConstruction: positiveInt("ef-construction", args["ef-construction"]) };
// Each segment is its own HNSW graph searched with its own candidates: fewer segments
// search faster, more of them find more true neighbours.
const maxSegments = positiveInt("max-segments", args["max-segments"] ?? "1");
const candidateSweep = (args["num-candidates"] ?? "")
  .split(",")
  .filter((v) => v.trim() !== "")
  .map((v) => positiveInt("num-candidates", v));
const queriesPerSecond = positiveInt("rate", args.rate);
const graph = {
  fromRows: positiveInt("hnsw-from-rows", args["hnsw-from-rows"]),
  candidates: positiveInt("candidates", args.candidates),
  expansionSearch: positiveInt("ef-search", args["ef-search"]),
  connectivity: positiveInt("graph-m", args["graph-m"]),
  expansionAdd: positiveInt("graph-ef-construction", args["graph-ef-construction"]),
};
// Search settings are not stored in a saved graph: each pair reopens the index, loading the graph built once.
const efSweep = (args["ef-sweep"] ?? "")
  .split(",")
  .filter((pair) => pair.trim() !== "")
  .map((pair) => {
    const [ef, candidates] = pair.split(":");
    return { expansionSearch: positiveInt("ef-sweep", ef), candidates: positiveInt("ef-sweep", candidates) };
  });
const model = "bench-embed";
const organizationId = "org-bench";
// A second organization (1 % of N) so the org filter has something to exclude.
const otherOrganizationId = "org-other";
const targets = {
  embedded: { p50Ms: 15 },
  embeddedHnsw: { p50Ms: 5, recall: 0.95 },
  elasticsearch: { p50Ms: 10, recall: 0.98 },
};

function positiveInt(name: string, value: string | undefined): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) throw new Error(`--${name} must be a positive integer, got ${value}`);
  return parsed;
}

function log(line: string): void {
  process.stdout.write(`${line}\n`);
}

interface Corpus {
  data: Dataset;
  ids: string[];
  rowById: Map<string, number>;
  other: Dataset;
  queries: Dataset;
  truth: number[][];
}

function buildCorpus(): Corpus {
  const startedMs = performance.now();
  const data = clusteredUnitVectors(n, dimensions, 100, 1, 1, 2);
  const other = clusteredUnitVectors(Math.max(1, Math.floor(n / 100)), dimensions, 100, 1, 1, 3);
  // Queries: fresh draws around the same centres, so each has close neighbours.
  const queries = clusteredUnitVectors(queryCount, dimensions, 100, 1, 1, 4);
  // Deterministic ids (valid v4 layout) so a kept ES index can be measured again.
  const ids = Array.from({ length: n }, (_, i) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, "0")}`);
  const rowById = new Map(ids.map((id, i) => [id, i]));
  log(`data: ${n} × ${dimensions} clustered unit vectors (100 clusters) in ${organizationId}, ${other.count} in ${otherOrganizationId}, ${queryCount} queries; generated in ${seconds(startedMs)} s`);
  const truthStartedMs = performance.now();
  const truth = exactTopK(data, queries, k);
  log(`exact top-${k} reference computed in ${seconds(truthStartedMs)} s`);
  return { data, ids, rowById, other, queries, truth };
}

function seconds(sinceMs: number): string {
  return ((performance.now() - sinceMs) / 1000).toFixed(1);
}

function records(corpus: Corpus, from: number, to: number): VectorRecord[] {
  const now = new Date().toISOString();
  const out: VectorRecord[] = [];
  for (let i = from; i < to; i++) {
    out.push({
      id: corpus.ids[i] as string,
      organization_id: organizationId,
      content: `document ${i}`,
      metadata: { kind: "document", row: i },
      model,
      vector: row(corpus.data, i),
      created_at: now,
    });
  }
  return out;
}

function otherRecords(corpus: Corpus): VectorRecord[] {
  const now = new Date().toISOString();
  return Array.from({ length: corpus.other.count }, (_, i) => ({
    id: randomUUID(),
    organization_id: otherOrganizationId,
    content: `other ${i}`,
    metadata: {},
    model,
    vector: row(corpus.other, i),
    created_at: now,
  }));
}

interface SearchFigures {
  p50Ms: number;
  p99Ms: number;
  recall: number;
  maxDistanceError: number;
}

async function measureSearch(index: VectorIndex, corpus: Corpus): Promise<SearchFigures> {
  // Warm-up: JIT, caches, ES's first-query costs.
  for (let q = 0; q < Math.min(20, queryCount); q++) await index.search(organizationId, row(corpus.queries, q), k);
  const latenciesMs: number[] = [];
  let recallSum = 0;
  let maxDistanceError = 0;
  const intervalMs = 1000 / queriesPerSecond;
  const firstDueMs = performance.now();
  for (let q = 0; q < queryCount; q++) {
    const query = row(corpus.queries, q);
    // Open loop: each query is due at a fixed time and timed from then.
    const dueMs = firstDueMs + q * intervalMs;
    const waitMs = dueMs - performance.now();
    if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
    const results: VectorSearchResult[] = await index.search(organizationId, query, k);
    latenciesMs.push(performance.now() - dueMs);
    const rows = results.map((r) => corpus.rowById.get(r.id) ?? -1);
    if (rows.includes(-1)) throw new Error("a result is not one of this organization's records");
    recallSum += recallAtK(rows, corpus.truth[q] as number[], k);
    results.forEach((r, i) => {
      const error = Math.abs(r.distance - exactCosineDistance(query, row(corpus.data, rows[i] as number)));
      maxDistanceError = Math.max(maxDistanceError, error);
    });
  }
  latenciesMs.sort((a, b) => a - b);
  return { p50Ms: percentile(latenciesMs, 50), p99Ms: percentile(latenciesMs, 99), recall: recallSum / queryCount, maxDistanceError };
}

function report(backend: string, indexed: { count: number; seconds: number }, search: SearchFigures, target: { p50Ms: number; recall?: number }): void {
  const rate = Math.round(indexed.count / indexed.seconds);
  const p50ok = search.p50Ms <= target.p50Ms ? "met" : "MISSED";
  const recallTarget = target.recall;
  const recallOk = recallTarget === undefined ? "" : search.recall >= recallTarget ? " (met)" : " (MISSED)";
  if (Number.isFinite(indexed.seconds)) log(`${backend}: indexed ${indexed.count} in ${indexed.seconds.toFixed(1)} s = ${rate} vectors/s`);
  log(`${backend}: search k=${k} over ${queryCount} queries at ${queriesPerSecond}/s: p50 ${search.p50Ms.toFixed(2)} ms, p99 ${search.p99Ms.toFixed(2)} ms  [target p50 ≤ ${target.p50Ms} ms: ${p50ok}]`);
  log(
    `${backend}: recall@${k} ${search.recall.toFixed(4)}${recallTarget === undefined ? "" : `  [target ≥ ${recallTarget}${recallOk}]`}; max |distance − exact cosine| ${search.maxDistanceError.toExponential(2)}`,
  );
}

// Where the embedded index lives: a fresh temporary directory (removed at the
// end), an empty --keep-dir (kept), or a --reuse-dir kept by an earlier run
// (measured without rebuilding: a million-vector graph takes about an hour).
async function embeddedDirectory(): Promise<{ directory: string; reused: boolean; kept: boolean }> {
  const reuse = args["reuse-dir"];
  if (reuse !== undefined) return { directory: reuse, reused: true, kept: true };
  const keep = args["keep-dir"];
  if (keep === undefined) return { directory: await mkdtemp(join(tmpdir(), "troupe-bench-vectors-")), reused: false, kept: false };
  await mkdir(keep, { recursive: true });
  if ((await readdir(keep)).length > 0) throw new Error(`--keep-dir ${keep} is not empty: measure it with --reuse-dir, or remove it`);
  return { directory: keep, reused: false, kept: true };
}

async function benchEmbedded(corpus: Corpus): Promise<void> {
  const { directory, reused, kept } = await embeddedDirectory();
  const open: OpenEmbedded = async (graphSettings) => {
    const startedMs = performance.now();
    const index = new EmbeddedVectorIndex({ directory, model, dimensions, limits, graph: graphSettings });
    await index.open();
    return { index, seconds: (performance.now() - startedMs) / 1000 };
  };
  try {
    if (reused) log(`embedded: measuring the index kept in ${directory} (no build)`);
    else await buildEmbedded(corpus, open);

    const hnsw = await open(graph);
    const loaded = hnsw.index.graphOpenStats;
    log(
      `embedded (HNSW): restart ${hnsw.seconds.toFixed(1)} s for ${hnsw.index.count(organizationId)} + ${hnsw.index.count(otherOrganizationId)} records, of which graphs ${(loaded.ms / 1000).toFixed(1)} s (loaded ${loaded.loaded}, built ${loaded.built}, caught up ${loaded.caughtUp}); RSS ${mib(process.memoryUsage().rss)} MiB`,
    );
    const approximate = await measureSearch(hnsw.index, corpus);
    const hnswStats = hnsw.index.searchStats();
    await hnsw.index.close();

    for (const settings of efSweep) {
      const swept = await open({ ...graph, ...settings });
      const figures = await measureSearch(swept.index, corpus);
      const sweptStats = swept.index.searchStats();
      await swept.index.close();
      report(`embedded (HNSW, ef_search ${settings.expansionSearch}, ${settings.candidates} candidates)`, { count: n, seconds: Number.NaN }, figures, targets.embeddedHnsw);
      log(`  ${sweptStats.graphRescored} of ${sweptStats.graphCandidates} candidates rescored in float32, the rest past the int8 bound`);
    }

    const exact = await open({ fromRows: 0 });
    log(`embedded (exact): restart ${exact.seconds.toFixed(1)} s (records from LMDB, no graph)`);
    const exactFigures = await measureSearch(exact.index, corpus);
    const stats = exact.index.searchStats();
    await exact.index.close();
    log(`embedded (exact): ${stats.quantized} searches used int8 candidates + float32 rescoring, ${stats.fallbacks} fell back to a float32 pass`);
    log(
      `embedded (HNSW): ${hnswStats.approximate} searches through the graph (M ${graph.connectivity}, ef_construction ${graph.expansionAdd}, ef_search ${graph.expansionSearch}, ${graph.candidates} candidates; ${hnswStats.graphRescored} of their ${hnswStats.graphCandidates} rescored in float32, the rest past the int8 bound)`,
    );
    report("embedded (exact)", { count: n, seconds: Number.NaN }, exactFigures, targets.embedded);
    report("embedded (HNSW)", { count: n, seconds: Number.NaN }, approximate, targets.embeddedHnsw);
    log(`| ${n} × ${dimensions} | recall@${k} | p50 | p99 (at ${queriesPerSecond} q/s) |`);
    log(`| exact | ${exactFigures.recall.toFixed(4)} | ${exactFigures.p50Ms.toFixed(2)} ms | ${exactFigures.p99Ms.toFixed(2)} ms |`);
    log(`| HNSW | ${approximate.recall.toFixed(4)} | ${approximate.p50Ms.toFixed(2)} ms | ${approximate.p99Ms.toFixed(2)} ms |`);
  } finally {
    if (kept) log(`embedded: index kept in ${directory}; measure it again with --reuse-dir ${directory}`);
    else await rm(directory, { recursive: true, force: true });
  }
}

type OpenEmbedded = (graphSettings: Partial<typeof graph>) => Promise<{ index: EmbeddedVectorIndex; seconds: number }>;

async function buildEmbedded(corpus: Corpus, open: OpenEmbedded): Promise<void> {
  const { index } = await open(graph);
  // The gateway's concern while a graph is built: how long the event loop stalls (graph inserts run on their own thread).
  const loopDelay = monitorEventLoopDelay({ resolution: 5 });
  loopDelay.enable();
  const startedMs = performance.now();
  for (let from = 0; from < n; from += 1000) {
    await index.add(records(corpus, from, Math.min(n, from + 1000)));
    // Progress on long builds (a million vectors takes many minutes on a busy machine).
    if ((from + 1000) % 100_000 === 0 && from + 1000 < n) {
      const insertSeconds = index.searchStats().graphInsertMs / 1000;
      log(`embedded: … ${from + 1000} indexed after ${seconds(startedMs)} s (HNSW inserts ${insertSeconds.toFixed(0)} s), RSS ${mib(process.memoryUsage().rss)} MiB`);
    }
  }
  const indexSeconds = (performance.now() - startedMs) / 1000;
  await index.graphsSettled();
  const settledSeconds = (performance.now() - startedMs) / 1000;
  loopDelay.disable();
  const graphSeconds = index.searchStats().graphInsertMs / 1000;
  await index.add(otherRecords(corpus));
  const rssAfterBuild = process.memoryUsage().rss;
  const closeStartedMs = performance.now();
  await index.close();
  log(`embedded: indexed ${n} in ${indexSeconds.toFixed(1)} s (${Math.round(n / indexSeconds)} vectors/s), HNSW inserts (graph thread) ${graphSeconds.toFixed(1)} s; close (saves the graph) ${seconds(closeStartedMs)} s`);
  log(
    `embedded: graphs complete ${settledSeconds.toFixed(1)} s after the first add; event loop delay while indexing and building: max ${(loopDelay.max / 1e6).toFixed(1)} ms, p99 ${(loopDelay.percentile(99) / 1e6).toFixed(1)} ms, mean ${(loopDelay.mean / 1e6).toFixed(1)} ms`,
  );
  log(`embedded: RSS after the build ${mib(rssAfterBuild)} MiB (the bench's own corpus and truth are ${mib(corpus.data.vectors.byteLength + corpus.other.vectors.byteLength)} MiB of it)`);
}

function mib(bytes: number): number {
  return Math.round(bytes / 1048576);
}

async function forceMerge(admin: Client, indexName: string): Promise<void> {
  const startedMs = performance.now();
  await admin.indices.forcemerge({ index: indexName, max_num_segments: maxSegments });
  log(`elasticsearch: force-merged to at most ${maxSegments} segment(s) in ${seconds(startedMs)} s`);
}

async function benchElasticsearch(corpus: Corpus, url: string): Promise<void> {
  const reuse = args["reuse-index"];
  const indexName = reuse ?? `troupe-bench-${Date.now()}`;
  const admin = new Client({ node: url, requestTimeout: 3_600_000 });
  // A 60 s search deadline, not Troupe's 5 s: a slow search is a figure here, not a failed run.
  const requestTimeoutMs = 60_000;
  const index = new ElasticsearchVectorIndex({ url, index: indexName, model, dimensions, bulkTimeoutMs: 300_000, requestTimeoutMs, hnsw, limits });
  try {
    await index.open();
    log(`elasticsearch: index ${indexName} at ${url}, float hnsw (m ${hnsw.m}, ef_construction ${hnsw.efConstruction}), default num_candidates max(${defaultNumCandidatesFloor}, 10·k)`);
    let build = { count: n, seconds: Number.NaN };
    if (reuse === undefined) {
      const startedMs = performance.now();
      // Two bulk requests in flight: ES indexes with its own threads; more only queues.
      const inFlight = 2;
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < n) {
          const from = next;
          next = Math.min(n, next + batchSize);
          await index.addBulk(records(corpus, from, next), { refresh: false });
        }
      };
      await Promise.all(Array.from({ length: inFlight }, worker));
      // In batches too: 10,000 records in one bulk request is past ES's 100 MB http.max_content_length.
      const other = otherRecords(corpus);
      for (let from = 0; from < other.length; from += batchSize) await index.addBulk(other.slice(from, from + batchSize), { refresh: false });
      await index.refresh();
      const bulkSeconds = (performance.now() - startedMs) / 1000;
      log(`elasticsearch: bulk-indexed and refreshed in ${bulkSeconds.toFixed(1)} s (${Math.round(n / bulkSeconds)} vectors/s)`);
      await forceMerge(admin, indexName);
      build = { count: n, seconds: (performance.now() - startedMs) / 1000 };
    } else {
      log(`elasticsearch: reusing ${indexName} (indexing not measured)`);
      if (args["max-segments"] !== undefined) await forceMerge(admin, indexName);
    }
    const segments = await admin.cat.segments({ index: indexName, format: "json" });
    log(`elasticsearch: ${segments.length} segments searched`);
    // The first search after a large merge reads the new segments from disk:
    // at a million vectors it outlasted the adapter's 5 s timeout. Timed here
    // with the admin client's long one, so the measured searches start warm.
    const coldStartedMs = performance.now();
    await admin.search({
      index: indexName,
      knn: { field: "vector", query_vector: Array.from(row(corpus.queries, 0)), k, num_candidates: index.numCandidates(k), filter: { term: { organization_id: organizationId } } },
      _source: false,
    });
    log(`elasticsearch: first search ${seconds(coldStartedMs)} s`);
    const search = await measureSearch(index, corpus);
    report("elasticsearch", build, search, targets.elasticsearch);
    if (reuse === undefined) log("elasticsearch: (the indexing rate counts bulk + refresh + force-merge)");
    for (const candidates of candidateSweep) {
      const variant = new ElasticsearchVectorIndex({ url, index: indexName, model, dimensions, requestTimeoutMs, numCandidates: () => candidates, limits });
      await variant.open();
      const figures = await measureSearch(variant, corpus);
      await variant.close();
      log(
        `elasticsearch (num_candidates ${candidates}): p50 ${figures.p50Ms.toFixed(2)} ms, p99 ${figures.p99Ms.toFixed(2)} ms, recall@${k} ${figures.recall.toFixed(4)}`,
      );
    }
  } finally {
    await index.close();
    if (!args["keep-index"] && reuse === undefined) await admin.indices.delete({ index: indexName }).catch(() => undefined);
    else log(`elasticsearch: kept index ${indexName}`);
    await admin.close();
  }
}

const corpus = buildCorpus();
const only = args.only;
if (only !== undefined && only !== "embedded" && only !== "elasticsearch") throw new Error("--only must be embedded or elasticsearch");
if (only !== "elasticsearch") await benchEmbedded(corpus);
const elasticsearchUrl = process.env["ELASTICSEARCH_URL"];
if (only !== "embedded") {
  if (elasticsearchUrl) await benchElasticsearch(corpus, elasticsearchUrl);
  else log("elasticsearch: skipped — ELASTICSEARCH_URL is not set (start one with `npm run elasticsearch`)");
}
