// The request log's series (the console's charts and each key's use) read
// across replicas: every replica adds to the aggregates of the calls it
// served only, so a series is the sum of every replica's raw buckets. The
// buckets travel raw (counts, spend, tokens, the latency histogram) and are
// added with mergeBucket before any point is computed: a percentile is read
// from the merged histogram, never averaged from each replica's.
// RequestLogReplicas asks the other replicas (tenancy/request-log-replicas.ts);
// one replica reads its own store (localSeries).
import { z } from "zod";
import { emptyBucket, mergeBucket, seriesPoints, type Bucket, type Resolution, type SeriesPoint } from "./request-log-aggregates.ts";
import type { RequestLogStore } from "./request-log-store.ts";

/** One series: a scope (`org:<id>`, `project:<id>`, `key:<id>`) at one resolution from `fromMs` to `toMs`. */
export interface SeriesRead {
  scope: string;
  resolution: Resolution;
  fromMs: number;
  toMs: number;
}

/** The console's series reads: one call for many series, so many keys cost one question to the other replicas. */
export interface RequestLogSeriesReads {
  /** Each read's points, in the order asked. */
  series(reads: readonly SeriesRead[]): SeriesPoint[][] | Promise<SeriesPoint[][]>;
}

export const seriesReadWire = z.object({
  scope: z.string(),
  resolution: z.enum(["minute", "hour", "day"]),
  fromMs: z.number(),
  toMs: z.number(),
});

/** One replica's answer to a read: its buckets written to, as [start ms, bucket]. */
export const seriesBucketsWire = z.array(z.tuple([z.number(), z.array(z.number())]));
export type SeriesBuckets = z.infer<typeof seriesBucketsWire>;

export function bucketsOf(local: RequestLogStore, read: SeriesRead): SeriesBuckets {
  return [...local.buckets(read.scope, read.resolution, read.fromMs, read.toMs)];
}

/** This replica's store alone (embedded, or one replica): nothing to ask. */
export function localSeries(local: RequestLogStore): RequestLogSeriesReads {
  return { series: (reads) => reads.map((r) => local.series(r.scope, r.resolution, r.fromMs, r.toMs)) };
}

/** One read's points from every replica's buckets for it: added bucket by bucket, then read. */
export function mergeSeries(read: SeriesRead, perReplica: readonly SeriesBuckets[]): SeriesPoint[] {
  const merged = new Map<number, Bucket>();
  for (const buckets of perReplica) {
    for (const [start, bucket] of buckets) {
      let into = merged.get(start);
      if (!into) merged.set(start, (into = emptyBucket()));
      mergeBucket(into, bucket);
    }
  }
  return seriesPoints(merged, read.resolution, read.fromMs, read.toMs);
}
