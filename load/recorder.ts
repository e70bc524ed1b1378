// Every answered (or failed) request lands here: per-second buckets for the
// live line and the charts, per-operation latencies for the percentile
// table, errors by status and code, and the slowest calls with Troupe's own
// X-Request-Id so an operator can find them in Troupe's logs and traces.
import { percentile } from "./stats.ts";

export interface Outcome {
  op: string;
  /** HTTP status; 0 when no answer came (connection error, timeout). */
  status: number;
  /** The `error.code` of Troupe's error body, or the network error's name. */
  code: string | undefined;
  message: string | undefined;
  /** From the request's scheduled start (open loop) or its send (closed loop). */
  latencyMs: number;
  /** How late the request left against its schedule (open loop; 0 closed). */
  lagMs: number;
  requestId: string | undefined;
  /** Seconds since the run started, when the answer completed. */
  atS: number;
}

export interface SecondBucket {
  second: number;
  ok: number;
  errors: number;
  latenciesMs: number[];
}

export interface Slow {
  op: string;
  status: number;
  latencyMs: number;
  requestId: string | undefined;
  atS: number;
}

const slowestKept = 10;

export class Recorder {
  readonly seconds: SecondBucket[] = [];
  readonly byOp = new Map<string, number[]>();
  readonly errorsByKey = new Map<string, number>();
  /** The first message seen for each error key. */
  readonly errorExamples = new Map<string, string>();
  readonly lagsMs: number[] = [];
  readonly slowest: Slow[] = [];
  ok = 0;
  errors = 0;

  record(o: Outcome): void {
    const second = Math.floor(o.atS);
    while (this.seconds.length <= second) this.seconds.push({ second: this.seconds.length, ok: 0, errors: 0, latenciesMs: [] });
    const bucket = this.seconds[second]!;
    this.lagsMs.push(o.lagMs);
    const failed = o.status === 0 || o.status >= 400;
    if (failed) {
      this.errors += 1;
      bucket.errors += 1;
      const key = errorKey(o.status, o.code);
      this.errorsByKey.set(key, (this.errorsByKey.get(key) ?? 0) + 1);
      if (!this.errorExamples.has(key)) this.errorExamples.set(key, `${o.op}: ${o.message ?? ""}`.slice(0, 300));
      return;
    }
    this.ok += 1;
    bucket.ok += 1;
    bucket.latenciesMs.push(o.latencyMs);
    let list = this.byOp.get(o.op);
    if (!list) this.byOp.set(o.op, (list = []));
    list.push(o.latencyMs);
    this.keepIfSlow({ op: o.op, status: o.status, latencyMs: o.latencyMs, requestId: o.requestId, atS: o.atS });
  }

  private keepIfSlow(s: Slow): void {
    const last = this.slowest[this.slowest.length - 1];
    if (this.slowest.length >= slowestKept && last && last.latencyMs >= s.latencyMs) return;
    this.slowest.push(s);
    this.slowest.sort((a, b) => b.latencyMs - a.latencyMs);
    if (this.slowest.length > slowestKept) this.slowest.pop();
  }
}

export function errorKey(status: number, code: string | undefined): string {
  return status === 0 ? `network ${code ?? "error"}` : `${status} ${code ?? "unknown"}`;
}

export interface Percentiles {
  count: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
}

export function percentiles(latenciesMs: readonly number[]): Percentiles {
  const sorted = Float64Array.from(latenciesMs).sort();
  const arr = Array.from(sorted);
  const sum = arr.reduce((a, b) => a + b, 0);
  return {
    count: arr.length,
    mean: arr.length ? sum / arr.length : NaN,
    p50: percentile(arr, 50),
    p90: percentile(arr, 90),
    p99: percentile(arr, 99),
    p999: percentile(arr, 99.9),
    max: arr.length ? arr[arr.length - 1]! : NaN,
  };
}
