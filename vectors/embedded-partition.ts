// In-memory exact cosine search for the embedded backend. One partition holds
// the unit vectors of one (organization, metadata.kind) pair in typed arrays
// split into fixed-size pages (partition-pages.ts): growing appends a page
// instead of doubling and copying everything (a 332 ms event-loop stall at
// 65,536 × 768), and a search is one pass over each page, merged into one
// top-k (exact-search.ts). Partitioning by kind makes the memory filter cost
// proportional to the memories, not to everything the organization indexed.
//
// Large partitions are searched in two steps that stay exact: usearch's SIMD
// brute force over an int8 copy (a quarter of the memory traffic of float32)
// picks candidates, which are then rescored in float32. Each row remembers
// how far its int8 copy is from it (‖x − x̃‖), which bounds the int8 error:
// |q·x − q̃·x̃| ≤ ‖q − q̃‖ + ‖x − x̃‖. Rescoring stops once no remaining row can
// beat the current k-th exact score; if the candidates run out first, the
// search falls back to a float32 pass. Results are exact either way.
//
// Partitions from GraphSettings.fromRows rows are searched approximately
// instead: a usearch HNSW graph over the same int8 copies, on the graph
// thread (graph-worker.ts), proposes candidates, rescored in float32
// (partition-graph.ts). Rows not yet confirmed in the graph are scored
// exactly beside them (graph-feed.ts); while most of the partition is still
// pending (the first build) the search is exact. Small partitions, and every
// partition when no graph settings are given, stay exact.
import type usearchModule from "usearch";
import { GraphFeed } from "./graph-feed.ts";
import type { GraphWorker, RemoteGraph } from "./graph-worker-client.ts";
import type { GraphMatches, GraphSettings } from "./partition-graph.ts";
import { topByFloat32, topByInt8ThenRescore, topByJsLoop, type ExactRows } from "./exact-search.ts";
import { quantize, TopK, vectorChecksum } from "./partition-math.ts";
import { PartitionPages } from "./partition-pages.ts";
import type { ExactSearchKernel, GraphSnapshotRows, PartitionEntry, PartitionHit, PartitionOptions, SavedGraphEntry, SearchStats } from "./partition-types.ts";

export type { ExactSearchKernel, GraphSnapshotRows, PartitionEntry, PartitionHit, PartitionOptions, SavedGraphEntry, SearchStats } from "./partition-types.ts";

let usearch: typeof usearchModule | undefined;

/**
 * Loads usearch (a native addon) once. The index awaits this before its first
 * usearch search, not at start: an embedded cold start must not pay for it
 * (bench/startup.ts).
 */
export async function loadUsearch(): Promise<void> {
  usearch ??= (await import("usearch")).default;
}

export function loadedUsearchModule(): typeof usearchModule {
  return loadedUsearch();
}

function loadedUsearch(): typeof usearchModule {
  if (!usearch) throw new Error("usearch is not loaded: await loadUsearch() before searching with the usearch kernel");
  return usearch;
}

/**
 * Allowance for rounding inside usearch's int8 cosine (its reciprocal square
 * roots are approximations); measured errors are ~1e-6, this keeps the bound safe.
 */
const boundSlack = 1e-3;
/** Beyond this many rows not yet in the graph, an exact search is cheaper than scoring them beside it. */
const pendingExactLimit = 2048;

export class VectorPartition {
  readonly dimensions: number;
  readonly stats: Omit<SearchStats, "graphInsertMs"> = { quantized: 0, fallbacks: 0, approximate: 0, graphCandidates: 0, graphRescored: 0 };
  /** Vectors, int8 copies, residuals (‖x − x̃‖), graph labels and checksums per row. */
  private readonly rows: PartitionPages;
  /** An upper bound of the rows' residuals (not lowered on removal: only ever conservative). */
  private maxResidual = 0;
  private entries: PartitionEntry[] = [];
  private readonly rowById = new Map<string, number>();
  private readonly kernel: ExactSearchKernel;
  private readonly quantizeFromRows: number;
  private readonly graphSettings: Readonly<GraphSettings> | undefined;
  private readonly rowByLabel = new Map<number, number>();
  private nextLabel = 0;
  private readonly graphs: GraphWorker | undefined;
  private readonly feed: GraphFeed;

  constructor(dimensions: number, options: PartitionOptions) {
    this.dimensions = dimensions;
    this.kernel = options.kernel;
    this.quantizeFromRows = options.quantizeFromRows ?? 4096;
    this.rows = new PartitionPages(dimensions, options.pageRows);
    this.graphSettings = options.graph;
    this.graphs = options.graphs;
    this.feed = new GraphFeed({
      dimensions,
      rowOf: (label) => this.rowByLabel.get(label),
      copyInt8: (row, out, offset) => this.rows.copyInt8(row, out, offset),
    });
  }

  get size(): number {
    return this.entries.length;
  }

  /** Inserts or replaces the record with this id; `unit` has length 1. */
  upsert(entry: PartitionEntry, unit: Float32Array): void {
    let row = this.rowById.get(entry.id);
    if (row === undefined) {
      row = this.entries.length;
      this.rows.ensureRow(row);
      this.entries.push(entry);
      this.rowById.set(entry.id, row);
    } else {
      this.entries[row] = entry;
      this.forgetLabel(this.rows.label(row));
    }
    const label = this.nextLabel++;
    this.rows.setLabel(row, label);
    this.rowByLabel.set(label, row);
    this.feed.added(label);
    const residual = this.rows.write(row, unit, vectorChecksum(unit));
    this.maxResidual = Math.max(this.maxResidual, residual);
  }

  /** Removes the record (the last row moves into its place). */
  remove(id: string): void {
    const row = this.rowById.get(id);
    if (row === undefined) return;
    this.forgetLabel(this.rows.label(row));
    const last = this.entries.length - 1;
    if (row !== last) {
      const moved = this.entries[last] as PartitionEntry;
      this.entries[row] = moved;
      this.rowById.set(moved.id, row);
      this.rows.move(last, row);
      this.rowByLabel.set(this.rows.label(row), row);
    }
    this.entries.pop();
    this.rowById.delete(id);
  }

  /** The k most similar records, most similar first; `query` has length 1. Through the graph when there is one. */
  async search(query: Float32Array, k: number): Promise<PartitionHit[]> {
    if (this.graphBehind) this.syncGraph();
    const remote = this.feed.remote;
    if (!remote || this.entries.length === 0 || this.feed.pendingRows > pendingExactLimit) return this.searchExact(query, k);
    return this.hits(await this.topByGraph(remote, query, k));
  }

  /** The exact k most similar records, most similar first; `query` has length 1. */
  searchExact(query: Float32Array, k: number): PartitionHit[] {
    const count = this.entries.length;
    if (count === 0) return [];
    const limit = Math.min(k, count);
    if (this.kernel === "js") return this.hits(this.topByJsLoop(query, limit));
    return this.hits(this.topByExact(query, limit));
  }

  private topByExact(query: Float32Array, limit: number): Array<{ row: number; cosine: number }> {
    if (this.entries.length < this.quantizeFromRows) return this.topByFloat32(query, limit);
    return this.topByInt8ThenRescore(query, limit);
  }

  private hits(top: Array<{ row: number; cosine: number }>): PartitionHit[] {
    const hits: PartitionHit[] = [];
    for (const { row, cosine } of top) {
      const entry = this.entries[row];
      if (entry !== undefined) hits.push({ entry, cosine });
    }
    return hits;
  }

  /** Whether the graph should be built or has rows to send. */
  get graphBehind(): boolean {
    if (this.feed.remote) return this.feed.hasUnsent;
    return (
      this.graphSettings !== undefined &&
      this.graphs !== undefined &&
      this.kernel === "usearch" &&
      this.feed.failures < 3 &&
      this.entries.length >= this.graphSettings.fromRows
    );
  }

  /** Rows not yet confirmed in the graph. */
  get pendingGraphRows(): number {
    return this.feed.pendingRows;
  }

  get hasGraph(): boolean {
    return this.feed.remote !== undefined;
  }

  /** Whether the graph changed since it was last saved or loaded. */
  get graphChanged(): boolean {
    return this.feed.changed;
  }

  set graphChanged(changed: boolean) {
    this.feed.changed = changed;
  }

  /**
   * Starts the graph once the partition reaches GraphSettings.fromRows rows,
   * or sends the rows stored since the last call. Never blocks: the inserts
   * run on the graph thread; `graphSettled` resolves when they are done.
   */
  syncGraph(): void {
    if (!this.graphBehind) return;
    if (!this.feed.remote) {
      const settings = this.graphSettings;
      if (!settings || !this.graphs) return;
      this.feed.start(this.graphs.create(this.dimensions, settings), this.rows.labels(this.entries.length));
      return;
    }
    this.feed.pump();
  }

  /** Resolves once every stored row is in the graph (at once when there is none). */
  graphSettled(): Promise<void> {
    this.syncGraph();
    return this.feed.settled();
  }

  /** Milliseconds the graph thread spent inserting this partition's rows. */
  get graphInsertMs(): number {
    return this.feed.insertMs;
  }

  /** Drops the graph (its organization is deleted). */
  dropGraph(): void {
    this.feed.drop();
  }

  /**
   * Ids, labels and checksums in row order, with the graph to save beside
   * them (undefined: no graph). Rows not yet sent to the graph are left out,
   * so the saved map never claims a node the graph file lacks (a restart
   * re-inserts them); rows in flight are in the graph before a save sent now.
   */
  graphSnapshot(): { rows: GraphSnapshotRows; graph: RemoteGraph } | undefined {
    this.feed.pump();
    const graph = this.feed.remote;
    if (!graph) return undefined;
    const unsent = this.feed.unsentLabels();
    const rows: GraphSnapshotRows = { ids: [], labels: new Float64Array(this.entries.length), checksums: new Uint32Array(this.entries.length) };
    for (let row = 0; row < this.entries.length; row++) {
      const label = this.rows.label(row);
      if (unsent.has(label)) continue;
      rows.labels[rows.ids.length] = label;
      rows.checksums[rows.ids.length] = this.rows.checksum(row);
      rows.ids.push((this.entries[row] as PartitionEntry).id);
    }
    return { rows: { ids: rows.ids, labels: rows.labels.slice(0, rows.ids.length), checksums: rows.checksums.slice(0, rows.ids.length) }, graph };
  }

  /**
   * Adopts a saved graph, loaded by `load` (on the graph thread) with the
   * nodes of removed or changed records removed. Records whose saved vector
   * still matches keep their node; the others (new or changed since the
   * save) are queued for insertion. Throws what `load` throws.
   */
  async adoptGraph(saved: ReadonlyMap<string, SavedGraphEntry>, load: (removals: number[]) => Promise<RemoteGraph>): Promise<void> {
    const kept = new Set<number>();
    const pending: number[] = [];
    let maxLabel = -1;
    for (const entry of saved.values()) maxLabel = Math.max(maxLabel, entry.label);
    this.rowByLabel.clear();
    this.nextLabel = Math.max(this.nextLabel, maxLabel + 1);
    for (let row = 0; row < this.entries.length; row++) {
      const before = saved.get((this.entries[row] as PartitionEntry).id);
      const label = before !== undefined && before.checksum === this.rows.checksum(row) ? before.label : this.nextLabel++;
      if (label === before?.label) kept.add(label);
      else pending.push(label);
      this.rows.setLabel(row, label);
      this.rowByLabel.set(label, row);
    }
    const removals: number[] = [];
    for (const entry of saved.values()) if (!kept.has(entry.label)) removals.push(entry.label);
    // Removed at load, not sent again: the feed only inserts `pending`.
    this.feed.start(await load(removals), pending);
    this.feed.changed = removals.length > 0 || pending.length > 0;
  }

  /** The label leaves the partition: out of the label map and, with the next job, out of the graph. */
  private forgetLabel(label: number): void {
    this.rowByLabel.delete(label);
    this.feed.forgotten(label);
  }

  /**
   * Graph candidates and the rows not yet in the graph, rescored in float32.
   * The graph answers nearest first by the int8 copies' cosine, which is
   * within `bound` of the exact one (the query's and the rows' quantization
   * residuals): once a candidate's int8 cosine plus the bound cannot beat the
   * k-th exact score, neither can any later one, and rescoring stops there.
   * Each rescore reads a 3 KB row (at a million rows, ~7 µs with its cache
   * misses), so this is most of a search's time outside the graph walk.
   */
  private async topByGraph(remote: RemoteGraph, query: Float32Array, k: number): Promise<Array<{ row: number; cosine: number }>> {
    const settings = this.graphSettings as Readonly<GraphSettings>;
    const d = this.dimensions;
    const queryInt8 = new Int8Array(d);
    const bound = quantize(query, queryInt8) + this.maxResidual + boundSlack;
    // Pending now, or confirmed while the graph search ran (it may have run before their insert).
    const pendingBefore = this.feed.pendingLabels();
    let matches: GraphMatches;
    try {
      matches = await remote.search(queryInt8, Math.max(k, settings.candidates));
    } catch {
      if (remote.failed && this.feed.remote === remote) this.feed.drop();
      return this.topByExactOrNone(query, k);
    }
    this.stats.approximate++;
    const limit = Math.min(k, this.entries.length);
    if (limit === 0) return [];
    const best = new TopK(limit);
    const seen = new Set<number>();
    const offer = (label: number): void => {
      const row = this.rowByLabel.get(label);
      // Undefined: a label the partition no longer holds (a record removed or replaced since).
      if (row === undefined || seen.has(row)) return;
      seen.add(row);
      best.offer(row, this.rows.dot(row, query));
    };
    const { labels, distances } = matches;
    let rescored = 0;
    for (; rescored < labels.length; rescored++) {
      if (best.full && 1 - (distances[rescored] as number) + bound < best.threshold) break;
      offer(Number(labels[rescored]));
    }
    this.stats.graphCandidates += labels.length;
    this.stats.graphRescored += rescored;
    for (const label of pendingBefore) offer(label);
    for (const label of this.feed.pendingLabels()) offer(label);
    // Too few live nodes reached (a graph thinned by removals): answer exactly.
    if (!best.full) return this.topByExact(query, limit);
    return best.sorted();
  }

  private topByExactOrNone(query: Float32Array, k: number): Array<{ row: number; cosine: number }> {
    const limit = Math.min(k, this.entries.length);
    return limit === 0 ? [] : this.kernel === "js" ? this.topByJsLoop(query, limit) : this.topByExact(query, limit);
  }

  private topByInt8ThenRescore(query: Float32Array, limit: number): Array<{ row: number; cosine: number }> {
    this.stats.quantized++;
    const rows = this.exactRows();
    const top = topByInt8ThenRescore(loadedUsearch(), rows, this.maxResidual + boundSlack, query, limit);
    if (top) return top;
    this.stats.fallbacks++;
    return topByFloat32(loadedUsearch(), rows, query, limit);
  }

  private topByFloat32(query: Float32Array, limit: number): Array<{ row: number; cosine: number }> {
    return topByFloat32(loadedUsearch(), this.exactRows(), query, limit);
  }

  private topByJsLoop(query: Float32Array, limit: number): Array<{ row: number; cosine: number }> {
    return topByJsLoop(this.exactRows(), query, limit);
  }

  private exactRows(): ExactRows {
    return this.rows.exactRows(this.entries.length);
  }
}
