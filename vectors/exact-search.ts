// The embedded partition's exact kernels (embedded-partition.ts explains the
// int8 bound): float32 rows scanned by usearch's SIMD brute force, by a plain
// loop, or int8 candidates rescored in float32 with the scan stopping once no
// remaining row can beat the k-th exact score.
import type usearchModule from "usearch";
import { dot, quantize, TopK } from "./partition-math.ts";

export interface ExactRows {
  /** count × dimensions unit vectors (float32), row-major, from offset 0. */
  data: Float32Array;
  count: number;
  dimensions: number;
}

export type Scored = Array<{ row: number; cosine: number }>;

/**
 * The exact top `limit` via int8 candidates, or undefined when the candidates
 * could not certify it (the caller then scans in float32). `margin` bounds the
 * rows' int8 error (their max ‖x − x̃‖ plus slack); the query's is added here.
 */
export function topByInt8ThenRescore(simd: typeof usearchModule, rows: ExactRows, quantized: Int8Array, margin: number, query: Float32Array, limit: number): Scored | undefined {
  const { data, count, dimensions: d } = rows;
  const queryInt8 = new Int8Array(d);
  const bound = quantize(query, queryInt8) + margin;
  // 1000: at 100k clustered 768-dim vectors, 100 candidates fell back to a
  // float32 pass on 55 % of queries, 1000 on none; its cost is the same scan.
  const candidates = Math.min(count, Math.max(1000, 20 * limit));
  // Views from offset 0 only: usearch reads typed arrays from their buffer's start.
  const matches = simd.exactSearch(quantized.subarray(0, count * d), queryInt8, d, candidates, simd.MetricKind.Cos, 1);
  const best = new TopK(limit);
  let certified = matches.keys.length >= count;
  for (let i = 0; i < matches.keys.length; i++) {
    const approximateCosine = 1 - (matches.distances[i] as number);
    // Every later candidate, and every row that was not a candidate, is at
    // most this close: once that cannot beat the k-th exact score, stop.
    if (best.full && approximateCosine + bound < best.threshold) {
      certified = true;
      break;
    }
    const row = Number(matches.keys[i]);
    best.offer(row, dot(data, row * d, query, d));
  }
  const lastCosine = 1 - (matches.distances[matches.keys.length - 1] ?? 2);
  if (!certified && best.full && lastCosine + bound < best.threshold) certified = true;
  return certified ? best.sorted() : undefined;
}

export function topByFloat32(simd: typeof usearchModule, rows: ExactRows, query: Float32Array, limit: number): Scored {
  const ownQuery = query.byteOffset === 0 ? query : query.slice();
  // threads 1: the gateway serves many requests at once; one search per core.
  const matches = simd.exactSearch(rows.data.subarray(0, rows.count * rows.dimensions), ownQuery, rows.dimensions, limit, simd.MetricKind.IP, 1);
  const top: Scored = [];
  // usearch's IP distance is 1 − dot.
  for (let i = 0; i < matches.keys.length; i++) top.push({ row: Number(matches.keys[i]), cosine: 1 - (matches.distances[i] as number) });
  return top;
}

export function topByJsLoop(rows: ExactRows, query: Float32Array, limit: number): Scored {
  const d = rows.dimensions;
  const best = new TopK(limit);
  for (let row = 0; row < rows.count; row++) {
    const score = dot(rows.data, row * d, query, d);
    if (!best.full || score > best.threshold) best.offer(row, score);
  }
  return best.sorted();
}
