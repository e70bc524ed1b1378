// In-memory exact cosine search for the embedded backend. One partition holds
// the unit vectors of one (organization, metadata.kind) pair in contiguous
// typed arrays, so a search is one pass over memory. Partitioning by kind
// makes the memory filter cost proportional to the memories, not to
// everything the organization indexed.
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
// instead: a usearch HNSW graph over the same int8 copies proposes
// candidates, rescored in float32 (partition-graph.ts). Small partitions,
// and every partition when no graph settings are given, stay exact.
import type usearchModule from "usearch";
import { PartitionGraph, type GraphSettings } from "./partition-graph.ts";
import { dot, quantize, TopK, vectorChecksum } from "./partition-math.ts";

let usearch: typeof usearchModule | undefined;

/**
 * Loads usearch (a native addon) once. The index awaits this before its first
 * usearch search, not at start: an embedded cold start must not pay for it
 * (issue 11, bench/startup.ts).
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

export interface PartitionEntry {
  id: string;
  content: string;
  /** JSON text; parsed only for the records a search returns. */
  metadataJson: string;
  model: string;
}

export interface PartitionHit {
  entry: PartitionEntry;
  /** Cosine similarity with the query. */
  cosine: number;
}

/** "usearch": SIMD kernels (int8 candidates + float32 rescoring); "js": a plain float32 loop. */
export type ExactSearchKernel = "usearch" | "js";

export interface PartitionOptions {
  kernel: ExactSearchKernel;
  /** Below this many rows a float32 pass is as fast; tests lower it to exercise the int8 path. */
  quantizeFromRows?: number;
  /** Approximate search for large partitions; absent: always exact. */
  graph?: Readonly<GraphSettings>;
}

/** What a saved graph knew about each record: the label it has there and its vector's checksum. */
export interface SavedGraphEntry {
  label: number;
  checksum: number;
}

/** The partition's rows as a graph snapshot needs them, in row order. */
export interface GraphSnapshotRows {
  ids: string[];
  labels: Float64Array;
  checksums: Uint32Array;
}

/** Counters for the bench and tests: how often the int8 step had to fall back. */
export interface SearchStats {
  quantized: number;
  fallbacks: number;
  /** Searches answered through the HNSW graph. */
  approximate: number;
  /** Milliseconds spent inserting into the graph (the build, then each batch). */
  graphInsertMs: number;
}

const initialCapacityRows = 64;
/**
 * Allowance for rounding inside usearch's int8 cosine (its reciprocal square
 * roots are approximations); measured errors are ~1e-6, this keeps the bound safe.
 */
const boundSlack = 1e-3;

export class VectorPartition {
  readonly dimensions: number;
  readonly stats: SearchStats = { quantized: 0, fallbacks: 0, approximate: 0, graphInsertMs: 0 };
  private data: Float32Array;
  private quantized: Int8Array;
  /** ‖x − x̃‖ per row, x̃ the unit vector of the row's int8 copy. */
  private residuals: Float32Array;
  /** An upper bound of `residuals` (not lowered on removal: only ever conservative). */
  private maxResidual = 0;
  private entries: PartitionEntry[] = [];
  private readonly rowById = new Map<string, number>();
  private readonly kernel: ExactSearchKernel;
  private readonly quantizeFromRows: number;
  private readonly graphSettings: Readonly<GraphSettings> | undefined;
  /** Per row: the label its current vector has in the graph (never reused). */
  private labels: Float64Array;
  /** Per row: vectorChecksum of its unit vector. */
  private checksums: Uint32Array;
  private readonly rowByLabel = new Map<number, number>();
  private nextLabel = 0;
  private graph: PartitionGraph | undefined;
  /** Labels stored since the graph last caught up (inserted in one batch: one thread pool per call). */
  private pendingLabels: number[] = [];
  /** Whether the graph changed since it was last saved or loaded. */
  graphChanged = false;

  constructor(dimensions: number, options: PartitionOptions) {
    this.dimensions = dimensions;
    this.kernel = options.kernel;
    this.quantizeFromRows = options.quantizeFromRows ?? 4096;
    this.data = new Float32Array(initialCapacityRows * dimensions);
    this.quantized = new Int8Array(initialCapacityRows * dimensions);
    this.residuals = new Float32Array(initialCapacityRows);
    this.graphSettings = options.graph;
    this.labels = new Float64Array(initialCapacityRows);
    this.checksums = new Uint32Array(initialCapacityRows);
  }

  get size(): number {
    return this.entries.length;
  }

  /** Inserts or replaces the record with this id; `unit` has length 1. */
  upsert(entry: PartitionEntry, unit: Float32Array): void {
    let row = this.rowById.get(entry.id);
    if (row === undefined) {
      row = this.entries.length;
      if (row + 1 > this.residuals.length) this.grow();
      this.entries.push(entry);
      this.rowById.set(entry.id, row);
    } else {
      this.entries[row] = entry;
      this.forgetLabel(this.labels[row] as number);
    }
    const label = this.nextLabel++;
    this.labels[row] = label;
    this.rowByLabel.set(label, row);
    this.checksums[row] = vectorChecksum(unit);
    if (this.graph) this.pendingLabels.push(label);
    this.data.set(unit, row * this.dimensions);
    const residual = quantize(unit, this.quantized.subarray(row * this.dimensions, (row + 1) * this.dimensions));
    this.residuals[row] = residual;
    this.maxResidual = Math.max(this.maxResidual, residual);
  }

  /** Removes the record (the last row moves into its place). */
  remove(id: string): void {
    const row = this.rowById.get(id);
    if (row === undefined) return;
    this.forgetLabel(this.labels[row] as number);
    const last = this.entries.length - 1;
    if (row !== last) {
      const moved = this.entries[last] as PartitionEntry;
      this.entries[row] = moved;
      this.rowById.set(moved.id, row);
      const d = this.dimensions;
      this.data.copyWithin(row * d, last * d, (last + 1) * d);
      this.quantized.copyWithin(row * d, last * d, (last + 1) * d);
      this.residuals[row] = this.residuals[last] as number;
      const movedLabel = this.labels[last] as number;
      this.labels[row] = movedLabel;
      this.checksums[row] = this.checksums[last] as number;
      this.rowByLabel.set(movedLabel, row);
    }
    this.entries.pop();
    this.rowById.delete(id);
  }

  /** The k most similar records, most similar first; `query` has length 1. */
  search(query: Float32Array, k: number): PartitionHit[] {
    const count = this.entries.length;
    if (count === 0) return [];
    const limit = Math.min(k, count);
    if (this.kernel === "js") return this.hits(this.topByJsLoop(query, limit));
    // A search between a batch's apply and its graph insert (or a build) must still see every row.
    if (this.graphBehind) this.syncGraph();
    if (this.graph && this.graph.size > 0) return this.hits(this.topByGraph(query, limit));
    if (count < this.quantizeFromRows) return this.hits(this.topByFloat32(query, limit));
    return this.hits(this.topByInt8ThenRescore(query, limit));
  }

  private hits(top: Array<{ row: number; cosine: number }>): PartitionHit[] {
    const hits: PartitionHit[] = [];
    for (const { row, cosine } of top) {
      const entry = this.entries[row];
      if (entry !== undefined) hits.push({ entry, cosine });
    }
    return hits;
  }

  /** Whether the graph should be built or has rows to catch up on (syncGraph needs usearch loaded). */
  get graphBehind(): boolean {
    if (this.graph) return this.pendingLabels.length > 0;
    return this.graphSettings !== undefined && this.kernel === "usearch" && this.entries.length >= this.graphSettings.fromRows;
  }

  /** Rows waiting to be inserted into the graph. */
  get pendingGraphRows(): number {
    return this.pendingLabels.length;
  }

  get hasGraph(): boolean {
    return this.graph !== undefined;
  }

  /**
   * Builds the graph once the partition reaches GraphSettings.fromRows rows,
   * or inserts the rows stored since the last call. Blocking (usearch inserts
   * on every core); call after a batch is applied and after a load.
   */
  syncGraph(): void {
    if (!this.graphBehind) return;
    const settings = this.graphSettings;
    if (!settings) return;
    const startedMs = performance.now();
    if (!this.graph) {
      this.graph = PartitionGraph.create(loadedUsearch(), this.dimensions, settings);
      this.pendingLabels = Array.from(this.labels.subarray(0, this.entries.length));
    }
    const live = this.pendingLabels.filter((label) => this.rowByLabel.has(label));
    this.pendingLabels = [];
    const d = this.dimensions;
    // Chunks bound the temporary copy (a 1,000,000-row first build would copy 768 MB at once).
    for (let from = 0; from < live.length; from += 65_536) {
      const chunk = live.slice(from, from + 65_536);
      const vectors = new Int8Array(chunk.length * d);
      const keys = new BigUint64Array(chunk.length);
      chunk.forEach((label, i) => {
        const row = this.rowByLabel.get(label) as number;
        vectors.set(this.quantized.subarray(row * d, (row + 1) * d), i * d);
        keys[i] = BigInt(label);
      });
      this.graph.add(keys, vectors);
    }
    if (live.length > 0) this.graphChanged = true;
    this.stats.graphInsertMs += performance.now() - startedMs;
  }

  /** Ids, labels and checksums in row order, with the graph to save beside them (undefined: no graph). */
  graphSnapshot(): { rows: GraphSnapshotRows; graph: PartitionGraph } | undefined {
    if (!this.graph) return undefined;
    const count = this.entries.length;
    return {
      rows: { ids: this.entries.map((entry) => entry.id), labels: this.labels.slice(0, count), checksums: this.checksums.slice(0, count) },
      graph: this.graph,
    };
  }

  /**
   * Adopts a graph loaded from disk. Records whose saved vector still matches
   * keep their node; the others (new or changed since the save) are queued for
   * insertion and the nodes of removed or changed records are removed.
   */
  adoptGraph(graph: PartitionGraph, saved: ReadonlyMap<string, SavedGraphEntry>): void {
    const kept = new Set<number>();
    let maxLabel = -1;
    for (const entry of saved.values()) maxLabel = Math.max(maxLabel, entry.label);
    this.rowByLabel.clear();
    this.pendingLabels = [];
    this.nextLabel = Math.max(this.nextLabel, maxLabel + 1);
    for (let row = 0; row < this.entries.length; row++) {
      const before = saved.get((this.entries[row] as PartitionEntry).id);
      const label = before !== undefined && before.checksum === this.checksums[row] ? before.label : this.nextLabel++;
      if (label === before?.label) kept.add(label);
      else this.pendingLabels.push(label);
      this.labels[row] = label;
      this.rowByLabel.set(label, row);
    }
    let removed = 0;
    for (const entry of saved.values()) {
      if (kept.has(entry.label)) continue;
      graph.remove(entry.label);
      removed++;
    }
    this.graph = graph;
    this.graphChanged = removed > 0 || this.pendingLabels.length > 0;
  }

  /** The label leaves the partition: out of the label map and out of the graph. */
  private forgetLabel(label: number): void {
    this.rowByLabel.delete(label);
    this.graph?.remove(label);
  }

  private topByGraph(query: Float32Array, limit: number): Array<{ row: number; cosine: number }> {
    this.stats.approximate++;
    const settings = this.graphSettings as Readonly<GraphSettings>;
    const d = this.dimensions;
    const queryInt8 = new Int8Array(d);
    quantize(query, queryInt8);
    const matches = (this.graph as PartitionGraph).search(queryInt8, Math.max(limit, settings.candidates));
    const best = new TopK(limit);
    for (const key of matches.labels) {
      const row = this.rowByLabel.get(Number(key));
      // A label the partition no longer holds: a record removed or replaced since.
      if (row !== undefined) best.offer(row, dot(this.data, row * d, query, d));
    }
    // Too few live nodes reached (a graph thinned by removals): answer exactly.
    if (!best.full) return this.entries.length < this.quantizeFromRows ? this.topByFloat32(query, limit) : this.topByInt8ThenRescore(query, limit);
    return best.sorted();
  }

  private topByInt8ThenRescore(query: Float32Array, limit: number): Array<{ row: number; cosine: number }> {
    this.stats.quantized++;
    const d = this.dimensions;
    const count = this.entries.length;
    const queryInt8 = new Int8Array(d);
    const queryResidual = quantize(query, queryInt8);
    const margin = queryResidual + this.maxResidual + boundSlack;
    // 1000: at 100k clustered 768-dim vectors, 100 candidates fell back to a
    // float32 pass on 55 % of queries, 1000 on none; its cost is the same scan.
    const candidates = Math.min(count, Math.max(1000, 20 * limit));
    // Views from offset 0 only: usearch reads typed arrays from their buffer's start.
    const simd = loadedUsearch();
    const matches = simd.exactSearch(this.quantized.subarray(0, count * d), queryInt8, d, candidates, simd.MetricKind.Cos, 1);
    const best = new TopK(limit);
    let certified = matches.keys.length >= count;
    for (let i = 0; i < matches.keys.length; i++) {
      const approximateCosine = 1 - (matches.distances[i] as number);
      // Every later candidate, and every row that was not a candidate, is at
      // most this close: once that cannot beat the k-th exact score, stop.
      if (best.full && approximateCosine + margin < best.threshold) {
        certified = true;
        break;
      }
      const row = Number(matches.keys[i]);
      best.offer(row, dot(this.data, row * d, query, d));
    }
    const lastCosine = 1 - (matches.distances[matches.keys.length - 1] ?? 2);
    if (!certified && best.full && lastCosine + margin < best.threshold) certified = true;
    if (certified) return best.sorted();
    this.stats.fallbacks++;
    return this.topByFloat32(query, limit);
  }

  private topByFloat32(query: Float32Array, limit: number): Array<{ row: number; cosine: number }> {
    const count = this.entries.length;
    const ownQuery = query.byteOffset === 0 ? query : query.slice();
    // threads 1: the gateway serves many requests at once; one search per core.
    const simd = loadedUsearch();
    const matches = simd.exactSearch(this.data.subarray(0, count * this.dimensions), ownQuery, this.dimensions, limit, simd.MetricKind.IP, 1);
    const top: Array<{ row: number; cosine: number }> = [];
    // usearch's IP distance is 1 − dot.
    for (let i = 0; i < matches.keys.length; i++) top.push({ row: Number(matches.keys[i]), cosine: 1 - (matches.distances[i] as number) });
    return top;
  }

  private topByJsLoop(query: Float32Array, limit: number): Array<{ row: number; cosine: number }> {
    const d = this.dimensions;
    const best = new TopK(limit);
    for (let row = 0, count = this.entries.length; row < count; row++) {
      const score = dot(this.data, row * d, query, d);
      if (!best.full || score > best.threshold) best.offer(row, score);
    }
    return best.sorted();
  }

  private grow(): void {
    const rows = this.residuals.length * 2;
    const data = new Float32Array(rows * this.dimensions);
    data.set(this.data);
    this.data = data;
    const quantized = new Int8Array(rows * this.dimensions);
    quantized.set(this.quantized);
    this.quantized = quantized;
    const residuals = new Float32Array(rows);
    residuals.set(this.residuals);
    this.residuals = residuals;
    const labels = new Float64Array(rows);
    labels.set(this.labels);
    this.labels = labels;
    const checksums = new Uint32Array(rows);
    checksums.set(this.checksums);
    this.checksums = checksums;
  }
}

