// The production UsageSink: every AI call's usage record is buffered in
// memory and appended to the usage ledger off the request path (never
// delaying a response). A flush starts every flushEveryMs, or as soon as
// flushAtRecords records wait, one at a time. Large, infrequent flushes are
// what keep the ledger cheap: each flush is one commit on the embedded
// ledger's thread (tenancy/billing.ts), and a commit costs as much CPU as
// dozens of records (bench/ledger-append.ts). When the ledger ran on the
// event loop, flushes of 16 records kept its bursts short; on its own
// thread, with a lease instead of a ledger step per hard-limited call
// (tenancy/budget-leases.ts), the commits are the cost that matters. A
// failed flush is retried after retryFlushAfterMs, however many records
// wait; the ledger is idempotent on each record's usage_key, so a flush
// retried after a partial failure never bills twice. The flush timer is
// injected so tests control time.
//
// With a journal (tenancy/usage-journal.ts), each record is also written to
// an append-only file before record() returns — before its call is answered
// — so a crash loses none: the next start hands the journal's leftovers to
// recover(), and they reach the ledger like any other batch. The journal is
// cut at each flush, so fewer flushes also mean fewer segment files.
// recordGrouped is record for a caller that answers after a promise (an HTTP
// route's ctx.bill): the journal groups the writes of one event-loop turn
// into one (tenancy/usage-journal.ts).
import type { Logger } from "../core/log.ts";
import type { UsageRecord, UsageSink } from "../providers/usage.ts";
import type { UsageJournal } from "./usage-journal.ts";

export const flushEveryMs = 200;
/** A flush starts (on the next timer turn, never on the request's) once this many records wait. */
export const flushAtRecords = 1024;
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
  /** Where each record is written before its call is answered; none: records wait in memory only. */
  journal?: UsageJournal;
}

/** Where a flushed batch goes: the ledger's append (`Billing.write` in billing.ts also publishes the budget alerts it crossed). */
export type WriteUsage = (batch: UsageRecord[]) => Promise<void>;

export class UsageRecorder implements UsageSink {
  private readonly write: WriteUsage;
  private readonly log: Logger;
  private buffer: UsageRecord[] = [];
  private readonly schedule: ScheduleFlush;
  /** Cancels the pending flush; undefined when none is scheduled. */
  private cancelFlush: (() => void) | undefined;
  /** The pending flush is the early one (flushAtRecords reached), not the timer's. */
  private flushIsEarly = false;
  private flushing: Promise<void> | undefined;
  /** A batch is with the store: the next one waits for it. */
  private writing = false;
  /** The last write failed: only the retry timer flushes until one succeeds. */
  private failing = false;
  dropped = 0;
  private readonly journal: UsageJournal | undefined;
  /** The journal could not be written: logged once until it can again. */
  private journalFailing = false;
  /** close() ran: nothing more is scheduled (a retry timer would keep the process alive after its ledger closed). */
  private closed = false;

  constructor(write: WriteUsage, log: Logger, options: UsageRecorderOptions = {}) {
    this.write = write;
    this.log = log;
    this.schedule = options.schedule ?? timerSchedule;
    this.journal = options.journal;
  }

  record(usage: UsageRecord): void {
    if (this.closed) {
      // A call answered after shutdown began (the gateway drains first, so rare): said, not retried against a closed ledger.
      this.log.warn("usage recorded after the recorder closed: not billed", { usage_key: usage.usage_key });
      return;
    }
    if (this.journal) this.journalAppend(usage);
    this.push(usage);
  }

  /**
   * As record(), for a caller that answers only after the returned promise:
   * the record's journal line is written with those of the other calls of
   * this event-loop turn, in one write. Undefined when there is nothing to
   * wait for (no journal). The promise never rejects.
   */
  recordGrouped(usage: UsageRecord): Promise<void> | undefined {
    if (!this.journal || this.closed) {
      this.record(usage);
      return undefined;
    }
    const written = this.journal.appendGrouped(usage);
    this.push(usage);
    return written;
  }

  /** Records a crashed run left in the journal (already written there): to the ledger with the next batch. */
  recover(records: readonly UsageRecord[]): void {
    for (const usage of records) this.push(usage);
  }

  private journalAppend(usage: UsageRecord): void {
    try {
      this.journal?.append(usage);
      this.journalFailing = false;
    } catch (error) {
      // The call is answered all the same; its record still reaches the ledger unless the process dies first.
      if (!this.journalFailing) this.log.error("usage journal write failed: records are in memory only until it recovers", { error });
      this.journalFailing = true;
    }
  }

  private push(usage: UsageRecord): void {
    if (this.buffer.length >= maxBuffered) {
      this.buffer.shift();
      this.dropped += 1;
    }
    this.buffer.push(usage);
    if (this.buffer.length >= flushAtRecords) this.flushEarly();
    else this.cancelFlush ??= this.schedule(() => void this.flush(), flushEveryMs);
  }

  /** Replaces the timer's flush with one on the next timer turn, unless a write is on its way or failing. */
  private flushEarly(): void {
    if (this.flushIsEarly || this.writing || this.failing) {
      this.cancelFlush ??= this.schedule(() => void this.flush(), this.failing ? retryFlushAfterMs : flushEveryMs);
      return;
    }
    this.cancelFlush?.();
    this.flushIsEarly = true;
    this.cancelFlush = this.schedule(() => void this.flush(), 0);
  }

  async flush(): Promise<void> {
    // Called early (close, tests) the scheduled flush is no longer needed; called by it, cancelling is a no-op.
    this.cancelFlush?.();
    this.cancelFlush = undefined;
    this.flushIsEarly = false;
    await this.flushing;
    const batch = this.buffer;
    if (batch.length === 0) return;
    this.buffer = [];
    this.writing = true;
    const cut = this.journal?.cut();
    this.flushing = this.write(batch).then(
      async () => {
        if (cut !== undefined) await this.journal?.applied(cut);
        this.writing = false;
        this.failing = false;
        if (this.buffer.length >= flushAtRecords) this.flushEarly();
      },
      (error: unknown) => {
        this.writing = false;
        this.failing = true;
        this.log.warn("usage flush failed; will retry", { records: batch.length, error });
        this.buffer = batch.concat(this.buffer);
        this.cancelFlush?.();
        this.flushIsEarly = false;
        this.cancelFlush = this.closed ? undefined : this.schedule(() => void this.flush(), retryFlushAfterMs);
      },
    );
    await this.flushing;
  }

  /** Flushes what is buffered; called on shutdown. What the ledger did not take stays in the journal for the next start. */
  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
    this.cancelFlush?.();
    this.cancelFlush = undefined;
    this.journal?.close(this.buffer.length === 0 && !this.failing);
  }
}
