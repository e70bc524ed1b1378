// The request log's aggregates: per organization, project and key, minute,
// hour and day buckets of requests, errors, a latency histogram and spend,
// added to as entries are written (never by scanning the log), each
// resolution kept for a bounded time (older buckets are swept). The console
// draws its charts from these; p50/p95/p99 come from the histogram.
//
// A bucket is [requests, errors, spend (nano-dollars), tokens (in + out),
// ...counts per latency bound]. The bounds are fixed, so buckets of every replica and every
// release add up; a percentile reads as the bound of the bucket that reaches
// it (an upper estimate, within one bound's step).
import type { RequestLogEntry } from "./request-log-entry.ts";

/** Latency bucket upper bounds in ms; the last bucket takes everything above the last bound. */
export const latencyBoundsMs = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000] as const;

/** What a percentile in the last (unbounded) bucket reads as: twice the last bound, "more than a minute". */
export const overflowMs = 120_000;

export type Resolution = "minute" | "hour" | "day";
export const resolutions: readonly Resolution[] = ["minute", "hour", "day"];

export const bucketMs: Record<Resolution, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };

/** How long each resolution is kept: 2 days of minutes, 35 days of hours, 400 days of days. */
export const keptMs: Record<Resolution, number> = { minute: 2 * 86_400_000, hour: 35 * 86_400_000, day: 400 * 86_400_000 };

export type Bucket = number[];

const fixed = 4;

export function emptyBucket(): Bucket {
  return new Array<number>(fixed + latencyBoundsMs.length + 1).fill(0);
}

export function isError(status: number): boolean {
  return status >= 400;
}

export function latencySlot(latencyMs: number): number {
  for (let i = 0; i < latencyBoundsMs.length; i++) if (latencyMs <= (latencyBoundsMs[i] ?? 0)) return i;
  return latencyBoundsMs.length;
}

export function addToBucket(bucket: Bucket, e: Pick<RequestLogEntry, "status" | "latency_ms" | "cost_nanos" | "input_tokens" | "output_tokens">): void {
  bucket[0] = (bucket[0] ?? 0) + 1;
  if (isError(e.status)) bucket[1] = (bucket[1] ?? 0) + 1;
  bucket[2] = (bucket[2] ?? 0) + e.cost_nanos;
  bucket[3] = (bucket[3] ?? 0) + e.input_tokens + e.output_tokens;
  const slot = fixed + latencySlot(e.latency_ms);
  bucket[slot] = (bucket[slot] ?? 0) + 1;
}

export function mergeBucket(into: Bucket, from: readonly number[]): void {
  for (let i = 0; i < into.length; i++) into[i] = (into[i] ?? 0) + (from[i] ?? 0);
}

/** The scopes an entry counts in: its organization, its project and its key (the console's usage against a key's limits). */
export function scopesOf(e: Pick<RequestLogEntry, "organization_id" | "project_id" | "api_key_id">): string[] {
  return [`org:${e.organization_id}`, `project:${e.project_id}`, `key:${e.api_key_id}`];
}

export function bucketStart(ms: number, resolution: Resolution): number {
  return Math.floor(ms / bucketMs[resolution]) * bucketMs[resolution];
}

/** The latency (ms, a histogram bound) at or below which a fraction `q` of the bucket's requests finished; null for no requests. */
export function percentileMs(bucket: readonly number[], q: number): number | null {
  const total = bucket[0] ?? 0;
  if (total === 0) return null;
  const rank = Math.ceil(q * total);
  let seen = 0;
  for (let i = 0; i <= latencyBoundsMs.length; i++) {
    seen += bucket[fixed + i] ?? 0;
    if (seen >= rank) return latencyBoundsMs[i] ?? overflowMs;
  }
  return overflowMs;
}

/** One point of a series as the console and the API read it. */
export interface SeriesPoint {
  start_ms: number;
  requests: number;
  errors: number;
  spend_usd: number;
  tokens: number;
  p50_ms: number | null;
  p95_ms: number | null;
  p99_ms: number | null;
}

export function pointOf(startMs: number, bucket: readonly number[]): SeriesPoint {
  return {
    start_ms: startMs,
    requests: bucket[0] ?? 0,
    errors: bucket[1] ?? 0,
    spend_usd: (bucket[2] ?? 0) / 1e9,
    tokens: bucket[3] ?? 0,
    p50_ms: percentileMs(bucket, 0.5),
    p95_ms: percentileMs(bucket, 0.95),
    p99_ms: percentileMs(bucket, 0.99),
  };
}

/** A series from its buckets by start ms: every bucket from `fromMs` to `toMs` present, the missing ones as zeros. */
export function seriesPoints(buckets: ReadonlyMap<number, readonly number[]>, resolution: Resolution, fromMs: number, toMs: number): SeriesPoint[] {
  const points: SeriesPoint[] = [];
  for (let t = bucketStart(fromMs, resolution); t <= toMs; t += bucketMs[resolution]) points.push(pointOf(t, buckets.get(t) ?? emptyBucket()));
  return points;
}
