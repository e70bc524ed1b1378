// Synthetic data and measurement helpers for bench/vectors.ts: seeded,
// clustered unit vectors (real embeddings cluster by topic, which is what
// makes approximate search lose recall), exact ground truth, percentiles.
import usearch from "usearch";
import { seededRandom } from "../../test/support/seeded-random.ts";

export interface Dataset {
  dimensions: number;
  count: number;
  /** count × dimensions unit vectors, row-major. */
  vectors: Float32Array;
}


function gaussian(random: () => number): number {
  // Box–Muller; 1 − u keeps log away from 0.
  return Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
}

/**
 * `count` unit vectors around `clusters` random centres: each is centre +
 * N(0, spread²) noise per component, normalised. spread 1 puts a vector at
 * cosine ≈ 0.7 from its centre and ≈ 0.5 from its cluster mates.
 */
export function clusteredUnitVectors(
  count: number,
  dimensions: number,
  clusters: number,
  spread: number,
  centreSeed: number,
  noiseSeed: number,
): Dataset {
  // Same centreSeed = same topics: queries are drawn around the data's centres.
  const centreRandom = seededRandom(centreSeed);
  const centres = new Float32Array(clusters * dimensions);
  for (let i = 0; i < centres.length; i++) centres[i] = gaussian(centreRandom);
  const random = seededRandom(noiseSeed);
  const vectors = new Float32Array(count * dimensions);
  for (let row = 0; row < count; row++) {
    const centre = Math.floor(random() * clusters) * dimensions;
    const offset = row * dimensions;
    let sumSquares = 0;
    for (let j = 0; j < dimensions; j++) {
      const v = (centres[centre + j] as number) + spread * gaussian(random);
      vectors[offset + j] = v;
      sumSquares += v * v;
    }
    const inverseNorm = 1 / Math.sqrt(sumSquares);
    for (let j = 0; j < dimensions; j++) vectors[offset + j] = (vectors[offset + j] as number) * inverseNorm;
  }
  return { dimensions, count, vectors };
}

export function row(dataset: Dataset, index: number): Float32Array {
  return dataset.vectors.subarray(index * dataset.dimensions, (index + 1) * dataset.dimensions);
}

/** Exact top-k rows per query (usearch brute force, all cores, one batch): the recall reference. */
export function exactTopK(dataset: Dataset, queries: Dataset, k: number): number[][] {
  const truth: number[][] = [];
  const matches = usearch.exactSearch(dataset.vectors, queries.vectors.slice(), dataset.dimensions, k, usearch.MetricKind.IP, 0);
  for (let q = 0; q < queries.count; q++) {
    const one = matches instanceof usearch.BatchMatches ? matches.get(q) : matches;
    truth.push(Array.from(one.keys, (key) => Number(key)));
  }
  return truth;
}


export function recallAtK(found: readonly number[], truth: readonly number[], k: number): number {
  const expected = new Set(truth.slice(0, k));
  let hits = 0;
  for (const id of found.slice(0, k)) if (expected.has(id)) hits++;
  return hits / Math.min(k, expected.size || k);
}
