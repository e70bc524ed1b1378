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
import type usearchModule from "usearch";

let usearch: typeof usearchModule | undefined;

/**
 * Loads usearch (a native addon) once. The index awaits this before its first
 * usearch search, not at start: an embedded cold start must not pay for it
 * (issue 11, bench/startup.ts).
 */
export async function loadUsearch(): Promise<void> {
  usearch ??= (await import("usearch")).default;
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
}

/** Counters for the bench and tests: how often the int8 step had to fall back. */
export interface SearchStats {
  quantized: number;
  fallbacks: number;
}

const initialCapacityRows = 64;
/**
 * Allowance for rounding inside usearch's int8 cosine (its reciprocal square
 * roots are approximations); measured errors are ~1e-6, this keeps the bound safe.
 */
const boundSlack = 1e-3;

export class VectorPartition {
  readonly dimensions: number;
  readonly stats: SearchStats = { quantized: 0, fallbacks: 0 };
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

  constructor(dimensions: number, options: PartitionOptions) {
    this.dimensions = dimensions;
    this.kernel = options.kernel;
    this.quantizeFromRows = options.quantizeFromRows ?? 4096;
    this.data = new Float32Array(initialCapacityRows * dimensions);
    this.quantized = new Int8Array(initialCapacityRows * dimensions);
    this.residuals = new Float32Array(initialCapacityRows);
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
    }
    this.data.set(unit, row * this.dimensions);
    const residual = quantize(unit, this.quantized.subarray(row * this.dimensions, (row + 1) * this.dimensions));
    this.residuals[row] = residual;
    this.maxResidual = Math.max(this.maxResidual, residual);
  }

  /** Removes the record (the last row moves into its place). */
  remove(id: string): void {
    const row = this.rowById.get(id);
    if (row === undefined) return;
    const last = this.entries.length - 1;
    if (row !== last) {
      const moved = this.entries[last] as PartitionEntry;
      this.entries[row] = moved;
      this.rowById.set(moved.id, row);
      const d = this.dimensions;
      this.data.copyWithin(row * d, last * d, (last + 1) * d);
      this.quantized.copyWithin(row * d, last * d, (last + 1) * d);
      this.residuals[row] = this.residuals[last] as number;
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
  }
}

function dot(rows: Float32Array, offset: number, query: Float32Array, d: number): number {
  let s0 = 0;
  let s1 = 0;
  let j = 0;
  for (; j + 1 < d; j += 2) {
    s0 += (rows[offset + j] as number) * (query[j] as number);
    s1 += (rows[offset + j + 1] as number) * (query[j + 1] as number);
  }
  if (j < d) s0 += (rows[offset + j] as number) * (query[j] as number);
  return s0 + s1;
}

/**
 * Writes round(x / max|x| · 127) into `out` and returns ‖x − x̃‖, x̃ the unit
 * vector along the int8 values. Per-vector scaling uses the whole int8 range.
 */
function quantize(unit: Float32Array, out: Int8Array): number {
  const d = unit.length;
  let maxAbs = 0;
  for (let j = 0; j < d; j++) maxAbs = Math.max(maxAbs, Math.abs(unit[j] as number));
  const scale = maxAbs > 0 ? 127 / maxAbs : 0;
  let sumSquares = 0;
  for (let j = 0; j < d; j++) {
    const q = Math.round((unit[j] as number) * scale);
    out[j] = q;
    sumSquares += q * q;
  }
  if (sumSquares === 0) return 2;
  const inverseNorm = 1 / Math.sqrt(sumSquares);
  let residualSquares = 0;
  for (let j = 0; j < d; j++) residualSquares += ((unit[j] as number) - (out[j] as number) * inverseNorm) ** 2;
  return Math.sqrt(residualSquares);
}

/** The best `k` (row, score) pairs seen, kept sorted (k ≤ 100: insertion is cheap). */
class TopK {
  readonly k: number;
  private readonly rows: Int32Array;
  private readonly scores: Float64Array;
  private size = 0;

  constructor(k: number) {
    this.k = k;
    this.rows = new Int32Array(k);
    this.scores = new Float64Array(k);
  }

  get full(): boolean {
    return this.size === this.k;
  }

  /** The k-th best score (only meaningful when full). */
  get threshold(): number {
    return this.scores[this.k - 1] as number;
  }

  offer(row: number, score: number): void {
    if (this.full && score <= this.threshold) return;
    let at = this.full ? this.k - 1 : this.size++;
    while (at > 0 && (this.scores[at - 1] as number) < score) {
      this.scores[at] = this.scores[at - 1] as number;
      this.rows[at] = this.rows[at - 1] as number;
      at--;
    }
    this.scores[at] = score;
    this.rows[at] = row;
  }

  sorted(): Array<{ row: number; cosine: number }> {
    const out: Array<{ row: number; cosine: number }> = [];
    for (let i = 0; i < this.size; i++) out.push({ row: this.rows[i] as number, cosine: this.scores[i] as number });
    return out;
  }
}
