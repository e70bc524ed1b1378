// The end-of-run report: one JSON document (its schema below is what
// --json writes and what the tests check), the summary table printed on
// stdout, and the input of the HTML report.
import { z } from "zod";
import { fmt } from "./stats.ts";
import type { LoadOptions } from "./options.ts";
import { percentiles, type Recorder } from "./recorder.ts";
import { terminalSafe } from "./terminal-text.ts";

const num = z.number().nullable(); // NaN (no sample) is written as null
const percentilesSchema = z.object({ count: z.number().int(), mean: num, p50: num, p90: num, p99: num, p999: num, max: num });

export const reportSchema = z.object({
  tool: z.literal("troupe-load"),
  version: z.literal(1),
  target: z.string(),
  scenario: z.enum(["chat", "embeddings", "agents"]),
  model: z.string(),
  mode: z.enum(["open", "closed"]),
  rate: z.number().nullable(),
  concurrency: z.number().int().nullable(),
  duration_s: z.number(),
  ramp_up_s: z.number(),
  started_at: z.string(),
  elapsed_s: z.number(),
  requests: z.number().int(),
  ok: z.number().int(),
  errors: z.number().int(),
  throughput_rps: z.number(),
  latency_ms: z.object({ all: percentilesSchema, by_operation: z.record(z.string(), percentilesSchema) }),
  scheduler_lag_ms: z.object({ p50: num, p99: num }),
  errors_by_code: z.record(z.string(), z.number().int()),
  error_examples: z.record(z.string(), z.string()),
  per_second: z.array(z.object({ second: z.number().int(), ok: z.number().int(), errors: z.number().int(), p50_ms: num, p99_ms: num })),
  slowest: z.array(z.object({ operation: z.string(), status: z.number().int(), latency_ms: z.number(), request_id: z.string().nullable(), at_s: z.number() })),
});

export type Report = z.infer<typeof reportSchema>;

const orNull = (n: number): number | null => (Number.isFinite(n) ? n : null);
const cleanPercentiles = (p: ReturnType<typeof percentiles>) => ({ count: p.count, mean: orNull(p.mean), p50: orNull(p.p50), p90: orNull(p.p90), p99: orNull(p.p99), p999: orNull(p.p999), max: orNull(p.max) });

export function buildReport(options: LoadOptions, recorder: Recorder, startedAt: Date, elapsedS: number): Report {
  const all: number[] = [];
  const byOperation: Record<string, ReturnType<typeof cleanPercentiles>> = {};
  for (const [op, list] of [...recorder.byOp].sort(([a], [b]) => a.localeCompare(b))) {
    for (const v of list) all.push(v);
    byOperation[op] = cleanPercentiles(percentiles(list));
  }
  const lag = percentiles(recorder.lagsMs);
  return {
    tool: "troupe-load",
    version: 1,
    target: options.url,
    scenario: options.scenario,
    model: options.model,
    mode: options.rate !== undefined ? "open" : "closed",
    rate: options.rate ?? null,
    concurrency: options.concurrency ?? null,
    duration_s: options.durationS,
    ramp_up_s: options.rampUpS,
    started_at: startedAt.toISOString(),
    elapsed_s: elapsedS,
    requests: recorder.ok + recorder.errors,
    ok: recorder.ok,
    errors: recorder.errors,
    throughput_rps: recorder.ok / elapsedS,
    latency_ms: { all: cleanPercentiles(percentiles(all)), by_operation: byOperation },
    scheduler_lag_ms: { p50: orNull(lag.p50), p99: orNull(lag.p99) },
    errors_by_code: Object.fromEntries([...recorder.errorsByKey].sort(([, a], [, b]) => b - a)),
    error_examples: Object.fromEntries(recorder.errorExamples),
    per_second: recorder.seconds.map((s) => {
      const p = percentiles(s.latenciesMs);
      return { second: s.second, ok: s.ok, errors: s.errors, p50_ms: orNull(p.p50), p99_ms: orNull(p.p99) };
    }),
    slowest: recorder.slowest.map((s) => ({ operation: s.op, status: s.status, latency_ms: s.latencyMs, request_id: s.requestId ?? null, at_s: s.atS })),
  };
}

const f = (n: number | null, digits = 2): string => fmt(n ?? NaN, digits);

/** The plain-text summary for stdout. */
export function summaryTable(r: Report): string {
  const load = r.mode === "open" ? `${r.rate}/s open loop` : `${r.concurrency} in flight (closed loop)`;
  const lines = [
    `troupe-load ${r.scenario} (${r.model}) → ${r.target}: ${load}, ${r.duration_s} s${r.ramp_up_s ? ` (ramp-up ${r.ramp_up_s} s)` : ""}`,
    `requests ${r.requests}  ok ${r.ok}  errors ${r.errors}  throughput ${f(r.throughput_rps, 1)} req/s  elapsed ${f(r.elapsed_s, 1)} s`,
    "",
    `${"latency (ms)".padEnd(28)}${["count", "mean", "p50", "p90", "p99", "p99.9", "max"].map((h) => h.padStart(9)).join("")}`,
  ];
  const row = (name: string, p: Report["latency_ms"]["all"]) => `${name.padEnd(28)}${[String(p.count), f(p.mean), f(p.p50), f(p.p90), f(p.p99), f(p.p999), f(p.max)].map((c) => c.padStart(9)).join("")}`;
  lines.push(row("all", r.latency_ms.all));
  for (const [op, p] of Object.entries(r.latency_ms.by_operation)) if (Object.keys(r.latency_ms.by_operation).length > 1) lines.push(row(`  ${op}`, p));
  if (r.mode === "open") lines.push(`scheduler lag (ms): p50 ${f(r.scheduler_lag_ms.p50)}  p99 ${f(r.scheduler_lag_ms.p99)}`);
  if (r.errors > 0) {
    lines.push("", "errors:");
    for (const [code, n] of Object.entries(r.errors_by_code)) lines.push(`  ${code.padEnd(40)}${String(n).padStart(9)}  e.g. ${r.error_examples[code] ?? ""}`);
  }
  if (r.slowest.length > 0) {
    lines.push("", "slowest (X-Request-Id):");
    for (const s of r.slowest) lines.push(`  ${f(s.latency_ms).padStart(10)} ms  ${s.operation.padEnd(28)}${s.request_id ?? "(none)"}`);
  }
  return lines.map(terminalSafe).join("\n") + "\n";
}
