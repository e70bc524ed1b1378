// Approximate nearest-neighbour search for large embedded partitions: one
// usearch HNSW graph per partition, over the partition's own per-vector int8
// copies (usearch stores an Int8Array as given, with no second scaling; its
// cosine is scale-free, so the per-vector max-abs scaling of
// embedded-partition.ts is kept). The graph only proposes candidates: the
// partition rescores them in float32, so the distances returned are exact and
// only the choice of the top k is approximate.
//
// Keys are the partition's labels: a number given to each stored version of a
// record, never reused, so a removed or replaced vector can never be confused
// with a live one (a removed label stays in usearch as a tombstone that still
// helps navigation; the partition ignores labels it no longer holds).
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import type usearchModule from "usearch";

type UsearchIndex = InstanceType<(typeof usearchModule)["Index"]>;

export interface GraphSettings {
  /** Partitions from this many rows are searched through the graph; smaller ones stay exact. */
  fromRows: number;
  /** HNSW M: links per node (usearch default 16). */
  connectivity: number;
  /** Candidate list while inserting (ef_construction). */
  expansionAdd: number;
  /** Candidate list while searching (ef_search); at least the candidates asked for. */
  expansionSearch: number;
  /** Candidates taken from the graph and rescored in float32 (at least k). */
  candidates: number;
}

export const defaultGraphSettings: Readonly<GraphSettings> = {
  fromRows: 20_000,
  connectivity: 16,
  expansionAdd: 128,
  expansionSearch: 128,
  candidates: 80,
};

/** Labels nearest first, with usearch's int8 cosine distance (1 − cosine of the int8 copies) of each. */
export interface GraphMatches {
  labels: BigUint64Array;
  distances: Float32Array;
}

export class PartitionGraph {
  private readonly index: UsearchIndex;

  private constructor(index: UsearchIndex) {
    this.index = index;
  }

  static create(usearch: typeof usearchModule, dimensions: number, settings: Readonly<GraphSettings>): PartitionGraph {
    return new PartitionGraph(
      new usearch.Index({
        dimensions,
        metric: usearch.MetricKind.Cos,
        quantization: usearch.ScalarKind.I8,
        connectivity: settings.connectivity,
        expansion_add: settings.expansionAdd,
        expansion_search: settings.expansionSearch,
        multi: false,
      }),
    );
  }

  /** Reads a graph written by `save` (the whole file into memory: the graph must stay writable). */
  static load(usearch: typeof usearchModule, dimensions: number, settings: Readonly<GraphSettings>, path: string, expectedBytes: number): PartitionGraph {
    // usearch's loader does not survive every damaged file (a few bytes of
    // text made it spin): check the length saved beside it and the magic first.
    checkGraphFile(path, expectedBytes);
    const graph = PartitionGraph.create(usearch, dimensions, settings);
    graph.index.load(path);
    if (graph.index.dimensions() !== dimensions) throw new Error(`graph ${path} has ${graph.index.dimensions()} dimensions, expected ${dimensions}`);
    return graph;
  }

  /** Live (not removed) nodes. */
  get size(): number {
    return this.index.size();
  }

  /** Inserts rows of int8 vectors (rows × dimensions) under `labels`, blocking, on `threads` threads (0: every core). */
  add(labels: BigUint64Array, vectors: Int8Array, threads = 0): void {
    if (labels.length > 0) this.index.add(labels, vectors, threads);
  }

  remove(label: number): void {
    this.index.remove(BigInt(label));
  }

  /** Up to `count` labels nearest to `query` (int8, one thread: the gateway runs many searches at once). */
  search(query: Int8Array, count: number): GraphMatches {
    const matches = this.index.search(query, Math.max(1, Math.min(count, this.index.size())), 1);
    return { labels: matches.keys, distances: matches.distances };
  }

  save(path: string): void {
    this.index.save(path);
  }
}

/** The size of a saved graph file, recorded beside it so a damaged one is refused before usearch reads it. */
export function graphFileBytes(path: string): number {
  const fd = openSync(path, "r");
  try {
    return fstatSync(fd).size;
  } finally {
    closeSync(fd);
  }
}

function checkGraphFile(path: string, expectedBytes: number): void {
  const fd = openSync(path, "r");
  try {
    const size = fstatSync(fd).size;
    if (size !== expectedBytes) throw new Error(`graph ${path} is ${size} bytes, ${expectedBytes} were saved`);
    // usearch writes the vectors first (rows, bytes per row, the matrix), then its header.
    const shape = Buffer.alloc(8);
    readSync(fd, shape, 0, 8, 0);
    const headerAt = 8 + shape.readUInt32LE(0) * shape.readUInt32LE(4);
    const magic = Buffer.alloc(7);
    if (headerAt + 7 > size || readSync(fd, magic, 0, 7, headerAt) !== 7 || magic.toString("latin1") !== "usearch") {
      throw new Error(`graph ${path} is not a usearch file`);
    }
  } finally {
    closeSync(fd);
  }
}
