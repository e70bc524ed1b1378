// The two ways to apply load.
//
// Open loop (--rate): iteration i is scheduled at a fixed time from the
// start (linear ramp-up, then the target rate) and its first call's latency
// runs from that scheduled time, not from when it was sent: a slow Troupe
// cannot slow the driver down and hide its own stalls (no coordinated
// omission — the same rule as bench/loadgen). Node's timers wake on a
// millisecond grid, so sends may leave up to ~1 ms late; that lag is part of
// the latency and is reported on its own (`scheduler lag`) so it can be told
// apart. Closed loop (--concurrency): N workers each run iterations back to
// back, started evenly over the ramp-up.
import { setTimeout as sleep } from "node:timers/promises";
import type { TroupeClient } from "./client.ts";
import type { LoadOptions } from "./options.ts";
import type { Recorder } from "./recorder.ts";
import type { Call, Iteration } from "./scenarios.ts";

/** Milliseconds from the start at which iteration `i` is due: N(t) = rate·t²/(2·ramp) during the ramp, then rate·t. */
export function scheduledAtMs(i: number, rate: number, rampS: number): number {
  const rampCount = (rate * rampS) / 2;
  if (rampS > 0 && i < rampCount) return Math.sqrt((2 * rampS * i) / rate) * 1000;
  return (rampS + (i - rampCount) / rate) * 1000;
}

export interface RunContext {
  client: Pick<TroupeClient, "call">;
  recorder: Recorder;
  iteration: Iteration;
  options: LoadOptions;
  /** performance.now() at the start of the run. */
  startedAt: number;
}

/** A Call that times each request (the first from `scheduledAt` when given) and records it. */
function callRecorder(ctx: RunContext, scheduledAt: number | undefined): Call {
  let first = true;
  return async (op, method, path, body, wantBody) => {
    const sentAt = performance.now();
    // Sent up to 1 ms early (a due time under a timer tick away is not slept for): time from the send then.
    const from = first && scheduledAt !== undefined ? Math.min(scheduledAt, sentAt) : sentAt;
    const lagMs = first && scheduledAt !== undefined ? Math.max(0, sentAt - scheduledAt) : 0;
    first = false;
    const answer = await ctx.client.call(method, path, body, wantBody);
    const end = performance.now();
    ctx.recorder.record({ op, status: answer.status, code: answer.code, message: answer.message, latencyMs: end - from, lagMs, requestId: answer.requestId, atS: (end - ctx.startedAt) / 1000 });
    return answer;
  };
}

export async function openLoop(ctx: RunContext, rate: number): Promise<void> {
  const inFlight = new Set<Promise<void>>();
  const endMs = ctx.options.durationS * 1000;
  for (let i = 0; ; i++) {
    const dueMs = scheduledAtMs(i, rate, ctx.options.rampUpS);
    if (dueMs >= endMs) break;
    const wait = ctx.startedAt + dueMs - performance.now();
    if (wait >= 1) await sleep(Math.floor(wait));
    const p = ctx.iteration(callRecorder(ctx, ctx.startedAt + dueMs)).finally(() => inFlight.delete(p));
    inFlight.add(p);
  }
  await Promise.all(inFlight);
}

export async function closedLoop(ctx: RunContext, concurrency: number): Promise<void> {
  const endAt = ctx.startedAt + ctx.options.durationS * 1000;
  const worker = async (k: number): Promise<void> => {
    const startDelay = (k / concurrency) * ctx.options.rampUpS * 1000;
    if (startDelay >= 1) await sleep(startDelay);
    while (performance.now() < endAt) await ctx.iteration(callRecorder(ctx, undefined));
  };
  await Promise.all(Array.from({ length: concurrency }, (_, k) => worker(k)));
}
