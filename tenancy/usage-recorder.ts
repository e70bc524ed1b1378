// The production UsageSink: every AI call's usage record is buffered in
// memory and appended to the usage ledger off the request path (never
// delaying a response). One ledger append per flush keeps the cost per call
// to a few microseconds at thousands of calls per second. A failed flush is
// retried with the next one; the ledger is idempotent on each record's
// usage_key, so a flush retried after a partial failure never bills twice.
// The flush timer is injected so tests control time.
import type { Logger } from "../core/log.ts";
import type { UsageRecord, UsageSink } from "../providers/usage.ts";

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
  schedule?: ScheduleFlush;
}

/** Where a flushed batch goes: the ledger's append (billing-service.ts adds the budget alerts). */
export type WriteUsage = (batch: UsageRecord[]) => Promise<void>;

export class UsageRecorder implements UsageSink {
  private readonly write: WriteUsage;
  private readonly log: Logger;
  private buffer: UsageRecord[] = [];
  private readonly schedule: ScheduleFlush;
  /** Cancels the pending flush; undefined when none is scheduled. */
  private cancelFlush: (() => void) | undefined;
  private flushing: Promise<void> | undefined;
  dropped = 0;

  constructor(write: WriteUsage, log: Logger, options: UsageRecorderOptions = {}) {
    this.write = write;
    this.log = log;
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
    this.flushing = this.write(batch).catch((error: unknown) => {
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
