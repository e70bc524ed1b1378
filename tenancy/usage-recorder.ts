// The production UsageSink: every AI call's usage record is buffered in
// memory and written to the tenancy store off the request path (never
// delaying a response). Each flush is one document holding its records
// (`usage-batch:<id>`), indexed under every project it contains
// (`project-usage:<project>`), so billing reads a project's records back by
// batch. One write per flush keeps the cost per call to a few microseconds at
// thousands of calls per second. A failed flush is retried with the next one.
// The clock and the flush timer are injected so tests control time.
import { systemClock, type Clock } from "../core/clock.ts";
import type { Logger } from "../core/log.ts";
import { prefixedId } from "../core/ids.ts";
import type { UsageRecord, UsageSink } from "../providers/usage.ts";
import type { StoreOp, DataStore } from "./data-store.ts";

export const flushEveryMs = 200;
/** After a failed flush: back off so a failing store is not hammered. */
export const retryFlushAfterMs = flushEveryMs * 5;
const maxBuffered = 100_000; // beyond this, oldest records are dropped and counted

/** Runs `run` once after `ms`; returns its cancel function. */
export type ScheduleFlush = (run: () => void, ms: number) => () => void;

const timerSchedule: ScheduleFlush = (run, ms) => {
  const timer = setTimeout(run, ms);
  return () => clearTimeout(timer);
};

export interface UsageRecorderOptions {
  clock?: Clock;
  schedule?: ScheduleFlush;
}

export class UsageRecorder implements UsageSink {
  private readonly store: DataStore;
  private readonly log: Logger;
  private buffer: UsageRecord[] = [];
  private readonly clock: Clock;
  private readonly schedule: ScheduleFlush;
  /** Cancels the pending flush; undefined when none is scheduled. */
  private cancelFlush: (() => void) | undefined;
  private flushing: Promise<void> | undefined;
  dropped = 0;

  constructor(store: DataStore, log: Logger, options: UsageRecorderOptions = {}) {
    this.store = store;
    this.log = log;
    this.clock = options.clock ?? systemClock;
    this.schedule = options.schedule ?? timerSchedule;
  }

  record(usage: UsageRecord): void {
    if (this.buffer.length >= maxBuffered) {
      this.buffer.shift();
      this.dropped += 1;
    }
    this.buffer.push(usage);
    this.cancelFlush ??= this.schedule(() => void this.flush(), flushEveryMs);
  }

  async flush(): Promise<void> {
    // Called early (close, tests) the scheduled flush is no longer needed; called by it, cancelling is a no-op.
    this.cancelFlush?.();
    this.cancelFlush = undefined;
    await this.flushing;
    const batch = this.buffer;
    if (batch.length === 0) return;
    this.buffer = [];
    const id = prefixedId("usb");
    const score = this.clock.now();
    const ops: StoreOp[] = [{ op: "put", key: `usage-batch:${id}`, value: batch }];
    for (const project of new Set(batch.map((u) => u.project_id))) ops.push({ op: "index", key: `project-usage:${project}`, member: id, score });
    this.flushing = this.store.apply(ops).catch((error: unknown) => {
      this.log.warn("usage flush failed; will retry", { records: batch.length, error });
      this.buffer = batch.concat(this.buffer);
      this.cancelFlush ??= this.schedule(() => void this.flush(), retryFlushAfterMs);
    });
    await this.flushing;
  }

  /** Flushes what is buffered; called on shutdown. */
  async close(): Promise<void> {
    await this.flush();
  }
}
