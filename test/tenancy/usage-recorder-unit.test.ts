// The usage recorder (tenancy/usage-recorder.ts) in process, against a store
// that records every batch and answers as told (at once, failing, or held
// until the test answers), a journal that records every step, a logger that
// keeps its lines and a flush scheduler run by hand (or Node's mock timers
// for the default setTimeout one). What it pins is what a lost or doubled
// record would cost: every record reaches exactly one successful write, in
// order, a failed batch goes back in front, the flush timing (the timer's,
// the early one at flushAtRecords, the retry's back-off) and what close()
// leaves in the journal. Fast on purpose: the mutation run
// (stryker.config.json) runs this file once per mutant.
import { mkdtempSync, rmSync } from "node:fs";
import { mock } from "node:test";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { createLogger } from "../../core/log.ts";
import { recordingLog } from "../support/recording-log.ts";
import type { UsageRecord } from "../../providers/usage.ts";
import { UsageJournal } from "../../tenancy/usage-journal.ts";
import { flushAtRecords, flushEveryMs, retryFlushAfterMs, UsageRecorder, type ScheduleFlush, type WriteUsage } from "../../tenancy/usage-recorder.ts";
import { usageRecord } from "../support/usage-record.ts";

const maxBuffered = 100_000; // tenancy/usage-recorder.ts keeps it private: the figure the drop test checks

function records(prefix: string, count: number): UsageRecord[] {
  return Array.from({ length: count }, (_, i) => usageRecord({ request_id: `${prefix}${i}` }));
}
const keys = (batch: readonly UsageRecord[]) => batch.map((r) => r.usage_key);

/** Lets every write and handler already started run to its end. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** The ledger's append as the recorder calls it: each batch's keys; at once, failing while `failures` > 0, or held while `hold` until `answer`. */
class RecordingStore {
  readonly batches: string[][] = [];
  failures = 0;
  hold = false;
  readonly error = new Error("the ledger is away");
  private readonly held: { resolve: () => void; reject: (error: Error) => void }[] = [];
  private readonly steps: string[];
  constructor(steps: string[] = []) {
    this.steps = steps;
  }

  readonly write: WriteUsage = (batch) => {
    this.batches.push(keys(batch));
    this.steps.push(`write ${batch.length}`);
    if (this.hold) return new Promise<void>((resolve, reject) => this.held.push({ resolve, reject }));
    if (this.failures > 0) {
      this.failures -= 1;
      return Promise.reject(this.error);
    }
    return Promise.resolve();
  };

  /** Answers the oldest held write. */
  answer(ok: boolean): void {
    const next = this.held.shift();
    if (!next) throw new Error("no write is held");
    if (ok) next.resolve();
    else next.reject(this.error);
  }
}

/** A flush scheduler the test runs by hand: every schedule call (delay, cancelled or not), in order. */
function manualSchedule() {
  const calls: { run: () => void; ms: number; cancelled: boolean }[] = [];
  const schedule: ScheduleFlush = (run, ms) => {
    const entry = { run, ms, cancelled: false };
    calls.push(entry);
    return () => void (entry.cancelled = true);
  };
  const live = () => calls.filter((c) => !c.cancelled).map((c) => c.ms);
  /** Runs every live scheduled flush, as their timers would. */
  const runDue = () => {
    for (const c of calls.filter((c) => !c.cancelled)) {
      c.cancelled = true;
      c.run();
    }
  };
  return { schedule, calls, live, runDue };
}

/** A real journal (its file in a temp dir) whose recorder-facing steps are recorded and answered as told. */
class RecordingJournal extends UsageJournal {
  readonly appended: string[] = [];
  readonly grouped: string[] = [];
  readonly closedWith: boolean[] = [];
  /** append throws while > 0. */
  failAppends = 0;
  readonly appendError = new Error("disk full");
  readonly groupedWrite = Promise.resolve();
  private cutsTaken = 0;
  private readonly journalSteps: string[];
  private readonly tempDir: string;
  constructor(steps: string[] = [], tempDir = mkdtempSync(join(tmpdir(), "troupe-recorder-unit-"))) {
    super(tempDir, createLogger("silent"));
    this.journalSteps = steps;
    this.tempDir = tempDir;
  }
  override append(record: UsageRecord): void {
    if (this.failAppends > 0) {
      this.failAppends -= 1;
      throw this.appendError;
    }
    this.appended.push(record.usage_key);
    this.journalSteps.push(`append ${record.usage_key}`);
  }
  override appendGrouped(record: UsageRecord): Promise<void> {
    this.grouped.push(record.usage_key);
    return this.groupedWrite;
  }
  override cut(): number {
    this.cutsTaken += 1;
    this.journalSteps.push(`cut ${this.cutsTaken}`);
    return this.cutsTaken;
  }
  override async applied(cut: number): Promise<void> {
    this.journalSteps.push(`applied ${cut}`);
  }
  override close(allApplied: boolean): void {
    this.closedWith.push(allApplied);
    super.close(false); // the real one's file and sync timer
    rmSync(this.tempDir, { recursive: true, force: true }); // a mutation run builds this file's journals once per mutant
  }
}

function setup(options: { journal?: RecordingJournal; steps?: string[] } = {}) {
  const store = new RecordingStore(options.steps);
  const timers = manualSchedule();
  const { log, lines } = recordingLog();
  const recorder = new UsageRecorder(store.write, log, options.journal ? { schedule: timers.schedule, journal: options.journal } : { schedule: timers.schedule });
  return { store, timers, log, lines, recorder };
}

t.test("the flush timings are 200 ms, 1,024 records and a 1 s retry", async (t) => {
  t.equal(flushEveryMs, 200);
  t.equal(flushAtRecords, 1024);
  t.equal(retryFlushAfterMs, 1000, "five timer periods");
});

t.test("records wait for one timer flush, which writes each once, in order", async (t) => {
  const { store, timers, recorder } = setup();
  const [a, b, c] = records("r", 3);
  recorder.record(a!);
  t.same(timers.live(), [flushEveryMs], "the first record schedules the timer's flush");
  recorder.record(b!);
  t.equal(timers.calls.length, 1, "a second record does not schedule another");
  await settle();
  t.same(store.batches, [], "recording writes nothing by itself");
  timers.runDue();
  await settle();
  t.same(store.batches, [["r0", "r1"]], "one write of both, in order");
  t.equal(timers.calls.length, 1, "nothing scheduled after a flush with nothing waiting");
  await recorder.flush();
  t.same(store.batches, [["r0", "r1"]], "a flush with nothing buffered writes nothing");
  recorder.record(c!);
  t.same(timers.live(), [flushEveryMs], "the next record schedules a new timer flush");
  timers.runDue();
  await settle();
  t.same(store.batches, [["r0", "r1"], ["r2"]], "the second batch holds only the new record");
});

t.test("the default scheduler is a setTimeout of flushEveryMs, cleared by an early flush", async (t) => {
  mock.timers.enable({ apis: ["setTimeout"] });
  t.teardown(() => mock.timers.reset());
  const store = new RecordingStore();
  const recorder = new UsageRecorder(store.write, createLogger("silent"));
  const [a, b, c] = records("d", 3);
  recorder.record(a!);
  mock.timers.tick(flushEveryMs - 1);
  await settle();
  t.same(store.batches, [], "nothing written 1 ms before the timer");
  mock.timers.tick(1);
  await settle();
  t.same(store.batches, [["d0"]], "written when the timer fires");
  recorder.record(b!); // its timer: at 400
  await recorder.flush();
  t.same(store.batches, [["d0"], ["d1"]]);
  mock.timers.tick(100);
  recorder.record(c!); // a new timer: at 500
  mock.timers.tick(100); // 400: the cleared timer must not flush c early
  await settle();
  t.same(store.batches, [["d0"], ["d1"]], "the timer of a record flushed early was cleared");
  mock.timers.tick(100);
  await settle();
  t.same(store.batches, [["d0"], ["d1"], ["d2"]], "c is written by its own timer");
  await recorder.close();
});

t.test("at flushAtRecords the timer's flush is replaced by one on the next turn, once", async (t) => {
  const { store, timers, recorder } = setup();
  const batch = records("e", flushAtRecords + 1);
  for (const r of batch.slice(0, flushAtRecords - 1)) recorder.record(r);
  t.same(timers.live(), [flushEveryMs], "below flushAtRecords: the timer's flush");
  recorder.record(batch[flushAtRecords - 1]!);
  t.same(timers.live(), [0], "at exactly flushAtRecords: a flush on the next timer turn instead");
  t.equal(timers.calls.length, 2);
  recorder.record(batch[flushAtRecords]!);
  t.equal(timers.calls.length, 2, "a record past it does not schedule the early flush again");
  timers.runDue();
  await settle();
  t.same(store.batches, [keys(batch)], "one write of all of them");

  const next = records("f", flushAtRecords);
  for (const r of next) recorder.record(r);
  t.same(timers.calls.slice(2).map((c) => c.ms), [flushEveryMs, 0], "after an early flush, the next burst gets its own early flush");
  timers.runDue();
  await settle();
  t.same(store.batches[1], keys(next));
});

t.test("while a write is on its way, records wait for it; its end starts an early flush only if flushAtRecords wait", async (t) => {
  const { store, timers, recorder } = setup();
  store.hold = true;
  for (const r of records("g", flushAtRecords)) recorder.record(r);
  timers.runDue();
  await settle();
  t.equal(store.batches.length, 1, "the first write is held");
  const waiting = records("h", flushAtRecords);
  for (const r of waiting) recorder.record(r);
  t.same(timers.live(), [flushEveryMs], "flushAtRecords reached during a write: still the timer's flush, no early one beside it");
  store.answer(true);
  await settle();
  t.same(timers.live(), [0], "its end starts the early flush");
  timers.runDue();
  await settle();
  t.same(store.batches[1], keys(waiting), "everything that waited goes in one write");
  store.answer(true);
  await settle();

  const few = records("i", 1);
  store.hold = true;
  for (const r of records("j", flushAtRecords)) recorder.record(r);
  timers.runDue();
  await settle();
  recorder.record(few[0]!);
  t.same(timers.live(), [flushEveryMs]);
  store.answer(true);
  await settle();
  t.same(timers.live(), [flushEveryMs], "a write ending with fewer waiting leaves them to the timer");
  store.hold = false;
  await recorder.close();
});

t.test("flush() called while a write is on its way: a record reaching flushAtRecords meanwhile schedules the timer's flush", async (t) => {
  const { store, timers, recorder } = setup();
  store.hold = true;
  recorder.record(usageRecord({ request_id: "k0" }));
  timers.runDue();
  await settle();
  const waiting = records("l", flushAtRecords);
  for (const r of waiting.slice(0, -1)) recorder.record(r);
  const flushed = recorder.flush(); // cancels the pending timer, then waits for the held write
  t.same(timers.live(), []);
  recorder.record(waiting.at(-1)!);
  t.same(timers.live(), [flushEveryMs], "the timer's delay, not the retry's: nothing failed");
  store.answer(true);
  await settle();
  store.answer(true);
  await flushed;
  t.same(store.batches, [["k0"], keys(waiting)]);
});

t.test("a record reaching flushAtRecords just after flush() was called schedules an early flush; the flush takes it", async (t) => {
  const { store, timers, recorder } = setup();
  const batch = records("ab", flushAtRecords);
  for (const r of batch.slice(0, -1)) recorder.record(r);
  const flushed = recorder.flush(); // cancels the timer; takes the batch on its next turn
  recorder.record(batch.at(-1)!);
  t.same(timers.live(), [0], "nothing is being written or failing: the early flush");
  await flushed;
  t.same(store.batches, [keys(batch)], "all of them in the flush already started");
  timers.runDue();
  await settle();
  t.equal(store.batches.length, 1, "the early flush then finds nothing to write");
});

t.test("a failed write warns, keeps its batch in front of newer records and is retried after retryFlushAfterMs", async (t) => {
  const { store, timers, lines, recorder } = setup();
  recorder.record(usageRecord({ request_id: "m0" }));
  store.failures = 1;
  await recorder.flush(); // resolves: a failed write is the recorder's to retry
  t.same(store.batches, [["m0"]]);
  t.same(lines, [{ level: "warn", msg: "usage flush failed; will retry", fields: { records: 1, error: store.error } }]);
  t.same(timers.live(), [retryFlushAfterMs], "a retry, with the longer delay");
  const calls = timers.calls.length;
  recorder.record(usageRecord({ request_id: "m1" }));
  const more = records("n", flushAtRecords);
  for (const r of more) recorder.record(r);
  t.equal(timers.calls.length, calls, "while failing, neither a record nor flushAtRecords of them schedules a flush");
  timers.runDue();
  await settle();
  t.same(store.batches[1], ["m0", "m1", ...keys(more)], "the failed batch first, then the newer records, in one write");

  const after = records("o", flushAtRecords);
  for (const r of after) recorder.record(r);
  t.same(timers.live(), [0], "once a write succeeds, flushAtRecords flushes early again");
  timers.runDue();
  await settle();
  t.same(store.batches[2], keys(after));
  t.equal(lines.length, 1, "one warning for one failure");
});

t.test("a write failing with records waiting replaces their timer by the retry", async (t) => {
  const { store, timers, recorder } = setup();
  store.hold = true;
  recorder.record(usageRecord({ request_id: "p0" }));
  timers.runDue();
  await settle();
  recorder.record(usageRecord({ request_id: "p1" }));
  t.same(timers.live(), [flushEveryMs]);
  store.answer(false);
  await settle();
  t.same(timers.live(), [retryFlushAfterMs], "only the retry is pending");
  store.hold = false;
  timers.runDue();
  await settle();
  t.same(store.batches, [["p0"], ["p0", "p1"]]);
});

t.test("a record arriving as the retry starts waits the retry's delay, and that flush runs", async (t) => {
  const { store, timers, recorder } = setup();
  const failed = records("q", flushAtRecords - 1);
  for (const r of failed) recorder.record(r);
  store.failures = 1;
  await recorder.flush();
  t.same(timers.live(), [retryFlushAfterMs]);
  store.hold = true;
  timers.runDue(); // the retry's flush starts; it takes the batch on its next turn
  recorder.record(usageRecord({ request_id: "q-last" }));
  t.same(timers.live(), [retryFlushAfterMs], "flushAtRecords reached while still failing: the retry's delay");
  await settle();
  t.same(store.batches[1], [...keys(failed), "q-last"]);
  store.answer(true);
  await settle();
  recorder.record(usageRecord({ request_id: "q-next" }));
  timers.runDue();
  await settle();
  t.same(store.batches[2], ["q-next"], "the flush scheduled then writes what came after");
  store.answer(true);
  await settle();
});

t.test("close() flushes, cancels a pending retry and refuses later records, saying so", async (t) => {
  const { store, timers, lines, recorder } = setup();
  recorder.record(usageRecord({ request_id: "s0" }));
  store.failures = 1;
  await recorder.flush();
  t.same(timers.live(), [retryFlushAfterMs]);
  await recorder.close();
  t.same(store.batches, [["s0"], ["s0"]], "close wrote the failed batch again");
  t.same(timers.live(), [], "and cancelled the retry");
  lines.length = 0;
  recorder.record(usageRecord({ request_id: "s1" }));
  t.same(lines, [{ level: "warn", msg: "usage recorded after the recorder closed: not billed", fields: { usage_key: "s1" } }]);
  t.equal(recorder.recordGrouped(usageRecord({ request_id: "s2" })), undefined);
  t.same(timers.live(), [], "nothing scheduled for them");
  await recorder.flush();
  t.same(store.batches, [["s0"], ["s0"]], "nothing written for them");
});

t.test("close() of a recorder that never recorded resolves and writes nothing", async (t) => {
  const { store, timers, recorder } = setup();
  await recorder.close();
  t.same(store.batches, []);
  t.same(timers.calls, []);
});

t.test("a write failing at close schedules no retry and keeps the journal's segments", async (t) => {
  const journal = new RecordingJournal();
  const { store, timers, lines, recorder } = setup({ journal });
  recorder.record(usageRecord({ request_id: "u0" }));
  store.failures = 1;
  await recorder.close();
  t.same(store.batches, [["u0"]]);
  t.same(timers.live(), [], "no retry after close (its timer would outlive the ledger)");
  t.same(journal.closedWith, [false], "the journal keeps the record for the next start");
  t.equal(lines[0]?.msg, "usage flush failed; will retry");
});

t.test("with a journal: each record is appended before record() returns, cut at each flush and applied once written", async (t) => {
  const steps: string[] = [];
  const journal = new RecordingJournal(steps);
  const { store, timers, recorder } = setup({ journal, steps });
  recorder.record(usageRecord({ request_id: "v0" }));
  t.same(journal.appended, ["v0"], "appended before record() returned");
  timers.runDue();
  await settle();
  t.same(steps, ["append v0", "cut 1", "write 1", "applied 1"]);
  recorder.record(usageRecord({ request_id: "v1" }));
  store.failures = 1;
  timers.runDue();
  await settle();
  t.same(steps.slice(4), ["append v1", "cut 2", "write 1"], "a failed write is not applied");
  timers.runDue();
  await settle();
  t.same(steps.slice(7), ["cut 3", "write 1", "applied 3"]);
  await recorder.close();
  t.same(journal.closedWith, [true], "everything reached the ledger: no segment is needed");
});

t.test("records handed over while close() writes keep the journal's segments", async (t) => {
  const journal = new RecordingJournal();
  const { store, recorder } = setup({ journal });
  recorder.record(usageRecord({ request_id: "w0" }));
  store.hold = true;
  const closed = recorder.close();
  await settle();
  recorder.recover([usageRecord({ request_id: "w1" })]);
  store.answer(true);
  await closed;
  t.same(store.batches, [["w0"]]);
  t.same(journal.closedWith, [false], "w1 did not reach the ledger: its segment stays");
});

t.test("a journal write that fails is logged once until one succeeds; the record still reaches the ledger", async (t) => {
  const journal = new RecordingJournal();
  const { store, lines, recorder } = setup({ journal });
  journal.failAppends = 2;
  const batch = records("x", 4);
  recorder.record(batch[0]!);
  recorder.record(batch[1]!);
  t.same(lines, [{ level: "error", msg: "usage journal write failed: records are in memory only until it recovers", fields: { error: journal.appendError } }]);
  recorder.record(batch[2]!);
  journal.failAppends = 1;
  recorder.record(batch[3]!);
  t.equal(lines.length, 2, "failing again after a success is logged again");
  t.same(journal.appended, ["x2"]);
  await recorder.flush();
  t.same(store.batches, [keys(batch)], "all four are written");
  await recorder.close();
});

t.test("recordGrouped: the journal's grouped write to wait for, or none without a journal", async (t) => {
  const journal = new RecordingJournal();
  const grouped = setup({ journal });
  const written = grouped.recorder.recordGrouped(usageRecord({ request_id: "y0" }));
  t.equal(written, journal.groupedWrite, "the promise of the journal's grouped write");
  t.same(journal.grouped, ["y0"]);
  t.same(journal.appended, [], "not also appended on its own");
  t.same(grouped.timers.live(), [flushEveryMs]);
  await grouped.recorder.flush();
  t.same(grouped.store.batches, [["y0"]]);
  await grouped.recorder.close();

  const plain = setup();
  t.equal(plain.recorder.recordGrouped(usageRecord({ request_id: "z0" })), undefined, "nothing to wait for without a journal");
  await plain.recorder.flush();
  t.same(plain.store.batches, [["z0"]]);
});

t.test("recover() hands a crashed run's records to the next batch without journaling them again", async (t) => {
  const journal = new RecordingJournal();
  const { store, timers, recorder } = setup({ journal });
  const leftover = records("rec", 2);
  recorder.recover(leftover);
  t.same(journal.appended, [], "already in the journal");
  t.same(timers.live(), [flushEveryMs]);
  recorder.record(usageRecord({ request_id: "new" }));
  timers.runDue();
  await settle();
  t.same(store.batches, [["rec0", "rec1", "new"]]);
  await recorder.close();
});

t.test("beyond maxBuffered the oldest record is dropped and counted", async (t) => {
  const { store, recorder } = setup();
  const batch = records("big", maxBuffered + 1);
  for (const r of batch.slice(0, maxBuffered)) recorder.record(r);
  t.equal(recorder.dropped, 0, "exactly maxBuffered are all kept");
  recorder.record(batch[maxBuffered]!);
  t.equal(recorder.dropped, 1);
  await recorder.flush();
  t.equal(store.batches[0]?.length, maxBuffered);
  t.equal(store.batches[0]?.[0], "big1", "the oldest went");
  t.equal(store.batches[0]?.at(-1), `big${maxBuffered}`, "the newest is kept");
});
