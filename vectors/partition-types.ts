// The embedded partition's shapes, shared by the partition, the index and
// the graph snapshots (embedded-partition.ts re-exports them).
import type { GraphWorker } from "./graph-worker-client.ts";
import type { GraphSettings } from "./partition-graph.ts";

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
  /** Rows per storage page (partition-pages.ts); tests lower it to cross page boundaries. Default 16,384. */
  pageRows?: number;
  /** Approximate search for large partitions; absent: always exact. */
  graph?: Readonly<GraphSettings>;
  /** The thread holding the graphs (required with `graph`). */
  graphs?: GraphWorker;
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
  /** Candidates those searches took from the graph, and how many of them were rescored in float32 (the rest could not reach the top k). */
  graphCandidates: number;
  graphRescored: number;
  /** Milliseconds the graph thread spent inserting (the build, then each batch). */
  graphInsertMs: number;
}
