// The embedded partition's exact kernels (embedded-partition.ts explains the
// int8 bound): float32 rows scanned by usearch's SIMD brute force, by a plain
// loop, or int8 candidates rescored in float32 with the scan stopping once no
// remaining row can beat the k-th exact score.
//
// The rows come in pages (partition-pages.ts). Each page is searched on its
// own and the results merged into one top-k; row numbers are the partition's.
// The top k of all rows is among the union of each page's top k, so merging
// exact per-page answers is exact.
import type usearchModule from "usearch";
import { dot, quantize, TopK } from "./partition-math.ts";

export interface ExactPage {
  /** Unit vectors (float32), row-major, from offset 0 of their own buffer. */
  data: Float32Array;
  /** Their int8 copies, laid out the same way. */
  quantized: Int8Array;
  /** The partition row of the page's first row. */
  firstRow: number;
  /** Rows of the page in use. */
  count: number;
}

export interface ExactRows {
  /** In row order; together they hold rows 0..count-1. */
  pages: readonly ExactPage[];
  count: number;
  dimensions: number;
}

export type Scored = Array<{ row: number; cosine: number }>;

/**
 * The exact top `limit` via int8 candidates, or undefined when the candidates
 * could not certify it (the caller then scans in float32). `margin` bounds the
 * rows' int8 error (their max ‖x − x̃‖ plus slack); the query's is added here.
 *
 * One top-k is shared by the pages, so a later page stops rescoring as soon as
 * its candidates cannot beat the k-th score found so far (the threshold only
 * rises, so a page certified against it stays certified). If any page cannot
 * be certified the whole search answers undefined: the caller's float32 pass
 * then scores every row with the same kernel, as before pages, rather than
 * mixing usearch float32 scores with this function's JS dot products.
 */
export function topByInt8ThenRescore(simd: typeof usearchModule, rows: ExactRows, margin: number, query: Float32Array, limit: number): Scored | undefined {
  const d = rows.dimensions;
  const queryInt8 = new Int8Array(d);
  const bound = quantize(query, queryInt8) + margin;
  const best = new TopK(limit);
  for (const page of rows.pages) {
    const { data, quantized, count, firstRow } = page;
    // 1000: at 100k clustered 768-dim vectors, 100 candidates fell back to a
    // float32 pass on 55 % of queries, 1000 on none; its cost is the same scan.
    const candidates = Math.min(count, Math.max(1000, 20 * limit));
    // Views from offset 0 only: usearch reads typed arrays from their buffer's start.
    const matches = simd.exactSearch(quantized.subarray(0, count * d), queryInt8, d, candidates, simd.MetricKind.Cos, 1);
    let certified = matches.keys.length >= count;
    for (let i = 0; i < matches.keys.length; i++) {
      const approximateCosine = 1 - (matches.distances[i] as number);
      // Every later candidate, and every row of the page that was not a
      // candidate, is at most this close: once that cannot beat the k-th
      // exact score, stop.
      if (best.full && approximateCosine + bound < best.threshold) {
        certified = true;
        break;
      }
      const row = Number(matches.keys[i]);
      best.offer(firstRow + row, dot(data, row * d, query, d));
    }
    const lastCosine = 1 - (matches.distances[matches.keys.length - 1] ?? 2);
    if (!certified && best.full && lastCosine + bound < best.threshold) certified = true;
    if (!certified) return undefined;
  }
  return best.sorted();
}

export function topByFloat32(simd: typeof usearchModule, rows: ExactRows, query: Float32Array, limit: number): Scored {
  const ownQuery = query.byteOffset === 0 ? query : query.slice();
  const d = rows.dimensions;
  const perPage: Scored[] = [];
  for (const page of rows.pages) {
    // threads 1: the gateway serves many requests at once; one search per core.
    const matches = simd.exactSearch(page.data.subarray(0, page.count * d), ownQuery, d, Math.min(limit, page.count), simd.MetricKind.IP, 1);
    const top: Scored = [];
    // usearch's IP distance is 1 − dot.
    for (let i = 0; i < matches.keys.length; i++) top.push({ row: page.firstRow + Number(matches.keys[i]), cosine: 1 - (matches.distances[i] as number) });
    perPage.push(top);
  }
  return perPage.length === 1 ? (perPage[0] as Scored) : mergeTop(perPage, limit);
}

/** The best `limit` of several lists sorted best first; on equal scores the earlier list (lower rows) first. */
function mergeTop(lists: readonly Scored[], limit: number): Scored {
  const merged: Scored = [];
  const next = lists.map(() => 0);
  while (merged.length < limit) {
    let from = -1;
    let bestCosine = -Infinity;
    for (let l = 0; l < lists.length; l++) {
      const candidate = (lists[l] as Scored)[next[l] as number];
      if (candidate !== undefined && (from === -1 || candidate.cosine > bestCosine)) {
        from = l;
        bestCosine = candidate.cosine;
      }
    }
    if (from === -1) break;
    merged.push((lists[from] as Scored)[next[from] as number] as Scored[number]);
    next[from] = (next[from] as number) + 1;
  }
  return merged;
}

export function topByJsLoop(rows: ExactRows, query: Float32Array, limit: number): Scored {
  const d = rows.dimensions;
  const best = new TopK(limit);
  for (const page of rows.pages) {
    for (let at = 0; at < page.count; at++) {
      const score = dot(page.data, at * d, query, d);
      if (!best.full || score > best.threshold) best.offer(page.firstRow + at, score);
    }
  }
  return best.sorted();
}
