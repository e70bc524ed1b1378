// In-memory exact cosine search for the embedded backend. One partition holds
// the unit vectors of one (organization, metadata.kind) pair in a single
// contiguous Float32Array, so a search is one pass over memory: usearch's
// SIMD exactSearch (inner product of unit vectors = cosine) when available,
// else a plain JS loop. Partitioning by kind makes the memory filter cost
// proportional to the memories, not to everything the organization indexed.
import usearch from "usearch";

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

export type ExactSearchKernel = "usearch" | "js";

const initialCapacityRows = 64;

export class VectorPartition {
  readonly dimensions: number;
  private data: Float32Array;
  private entries: PartitionEntry[] = [];
  private readonly rowById = new Map<string, number>();
  private readonly kernel: ExactSearchKernel;

  constructor(dimensions: number, kernel: ExactSearchKernel) {
    this.dimensions = dimensions;
    this.kernel = kernel;
    this.data = new Float32Array(initialCapacityRows * dimensions);
  }

  get size(): number {
    return this.entries.length;
  }

  has(id: string): boolean {
    return this.rowById.has(id);
  }

  /** Inserts or replaces the record with this id. */
  upsert(entry: PartitionEntry, unit: Float32Array): void {
    const existing = this.rowById.get(entry.id);
    if (existing !== undefined) {
      this.entries[existing] = entry;
      this.data.set(unit, existing * this.dimensions);
      return;
    }
    const row = this.entries.length;
    if ((row + 1) * this.dimensions > this.data.length) {
      // Doubling keeps appends amortised O(1) and the rows contiguous.
      const grown = new Float32Array(this.data.length * 2);
      grown.set(this.data);
      this.data = grown;
    }
    this.data.set(unit, row * this.dimensions);
    this.entries.push(entry);
    this.rowById.set(entry.id, row);
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
      this.data.copyWithin(row * this.dimensions, last * this.dimensions, (last + 1) * this.dimensions);
    }
    this.entries.pop();
    this.rowById.delete(id);
  }

  /** The k most similar records, most similar first. */
  search(query: Float32Array, k: number): PartitionHit[] {
    const count = this.entries.length;
    if (count === 0) return [];
    const limit = Math.min(k, count);
    const rows = this.data.subarray(0, count * this.dimensions);
    return this.kernel === "usearch" ? this.searchUsearch(rows, query, limit) : this.searchJs(rows, query, limit);
  }

  private searchUsearch(rows: Float32Array, query: Float32Array, limit: number): PartitionHit[] {
    // usearch reads a typed array from its buffer's start, ignoring byteOffset:
    // `rows` always starts at 0; a query view elsewhere is copied first.
    const ownQuery = query.byteOffset === 0 ? query : query.slice();
    // threads 1: the gateway serves many requests at once; one search per core.
    const matches = usearch.exactSearch(rows, ownQuery, this.dimensions, limit, usearch.MetricKind.IP, 1);
    const hits: PartitionHit[] = [];
    for (let i = 0; i < matches.keys.length && hits.length < limit; i++) {
      const row = Number(matches.keys[i]);
      const entry = this.entries[row];
      // usearch's IP distance is 1 − dot.
      if (entry !== undefined) hits.push({ entry, cosine: 1 - (matches.distances[i] as number) });
    }
    return hits;
  }

  private searchJs(rows: Float32Array, query: Float32Array, limit: number): PartitionHit[] {
    const d = this.dimensions;
    const count = this.entries.length;
    // A small sorted buffer of the best `limit` rows: O(n·k) worst case, ~O(n) in practice.
    const bestRows = new Int32Array(limit).fill(-1);
    const bestScores = new Float64Array(limit).fill(-Infinity);
    for (let row = 0, offset = 0; row < count; row++, offset += d) {
      let s0 = 0;
      let s1 = 0;
      let j = 0;
      for (; j + 1 < d; j += 2) {
        s0 += (rows[offset + j] as number) * (query[j] as number);
        s1 += (rows[offset + j + 1] as number) * (query[j + 1] as number);
      }
      if (j < d) s0 += (rows[offset + j] as number) * (query[j] as number);
      const score = s0 + s1;
      if (score <= (bestScores[limit - 1] as number)) continue;
      let at = limit - 1;
      while (at > 0 && (bestScores[at - 1] as number) < score) {
        bestScores[at] = bestScores[at - 1] as number;
        bestRows[at] = bestRows[at - 1] as number;
        at--;
      }
      bestScores[at] = score;
      bestRows[at] = row;
    }
    const hits: PartitionHit[] = [];
    for (let i = 0; i < limit; i++) {
      const entry = this.entries[bestRows[i] as number];
      if (entry !== undefined) hits.push({ entry, cosine: bestScores[i] as number });
    }
    return hits;
  }
}
