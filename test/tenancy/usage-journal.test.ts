// The usage journal (tenancy/usage-journal.ts) with the recorder: a record
// is on file when record() returns; a batch's segments go once the ledger
// has it, and stay while it fails; what a crashed run left is read back
// (a torn last line skipped) and deleted with the first batch that holds it.
import { appendFileSync, mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { createLogger } from "../../core/log.ts";
import type { UsageRecord } from "../../providers/usage.ts";
import { readJournal, UsageJournal } from "../../tenancy/usage-journal.ts";
import { UsageRecorder, type ScheduleFlush } from "../../tenancy/usage-recorder.ts";
import { usage } from "./ledger-store-suite.ts";

const log = createLogger("silent");

/** A ledger record whose usage_key is `req_<i>` (the suite's builder, keyed for these assertions). */
const record = (i: number): UsageRecord => usage({ request_id: `req_${i}`, usage_key: `req_${i}` });

/** No timers: flushes happen only when the test calls flush(). */
const never: ScheduleFlush = () => () => undefined;

function ledger() {
  const applied: UsageRecord[] = [];
  let failing = false;
  return {
    applied,
    fail: (on: boolean) => void (failing = on),
    write: async (batch: UsageRecord[]) => {
      if (failing) throw new Error("ledger down");
      applied.push(...batch);
    },
  };
}

const segments = (dir: string) => readdirSync(dir).filter((n) => n.endsWith(".log"));

t.test("a record is in the journal when record() returns, before any flush", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "journal-"));
  const l = ledger();
  const recorder = new UsageRecorder(l.write, log, { schedule: never, journal: new UsageJournal(dir, log) });
  recorder.record(record(1));
  recorder.record(record(2));
  t.same(l.applied, [], "nothing in the ledger yet");
  t.same(readJournal(dir).records.map((r) => r.usage_key), ["req_1", "req_2"], "both on file");
  await recorder.close();
});

t.test("a batch's segments are deleted once the ledger has it, kept while it fails", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "journal-"));
  const l = ledger();
  const recorder = new UsageRecorder(l.write, log, { schedule: never, journal: new UsageJournal(dir, log) });
  recorder.record(record(1));
  l.fail(true);
  await recorder.flush();
  recorder.record(record(2));
  t.same(readJournal(dir).records.map((r) => r.usage_key), ["req_1", "req_2"], "a failed batch's record stays on file");
  l.fail(false);
  await recorder.flush();
  t.same(l.applied.map((r) => r.usage_key), ["req_1", "req_2"]);
  t.same(readJournal(dir).records, [], "applied records leave the journal");
  t.equal(segments(dir).length, 1, "only the open segment is left");
  await recorder.close();
  t.equal(segments(dir).length, 0, "a clean shutdown leaves nothing to replay");
});

t.test("a flush ends only once its segments are deleted", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "journal-"));
  let openGate = (): void => undefined;
  const gate = new Promise<void>((resolve) => (openGate = resolve));
  // The deletion held at a gate: the flush must wait for it (the next cut relies on the segments being gone).
  class GatedJournal extends UsageJournal {
    override async applied(cut: number): Promise<void> {
      await gate;
      await super.applied(cut);
    }
  }
  const recorder = new UsageRecorder(ledger().write, log, { schedule: never, journal: new GatedJournal(dir, log) });
  recorder.record(record(1));
  let flushed = false;
  const flushing = recorder.flush().then(() => void (flushed = true));
  await new Promise((resolve) => setTimeout(resolve, 20));
  t.notOk(flushed, "the flush waits for the deletion");
  t.equal(segments(dir).length, 2, "the batch's segment is still there");
  openGate();
  await flushing;
  t.equal(segments(dir).length, 1, "once the flush ends, only the open segment is left");
  await recorder.close();
});

t.test("a shutdown with the ledger down keeps every record for the next start", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "journal-"));
  const l = ledger();
  const recorder = new UsageRecorder(l.write, log, { schedule: never, journal: new UsageJournal(dir, log) });
  recorder.record(record(1));
  l.fail(true);
  await recorder.close();
  t.same(readJournal(dir).records.map((r) => r.usage_key), ["req_1"]);
});

t.test("a crashed run's records are read back and applied once, a torn last line skipped", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "journal-"));
  const crashed = new UsageRecorder(ledger().write, log, { schedule: never, journal: new UsageJournal(dir, log) });
  for (let i = 1; i <= 3; i++) crashed.record(record(i));
  // The crash: no flush, no close; then a write cut off mid-line.
  const [open] = segments(dir);
  appendFileSync(join(dir, open ?? ""), JSON.stringify(record(4)).slice(0, 40));
  const leftover = readJournal(dir, log);
  t.same(leftover.records.map((r) => r.usage_key), ["req_1", "req_2", "req_3"]);

  const l = ledger();
  const restarted = new UsageRecorder(l.write, log, { schedule: never, journal: new UsageJournal(dir, log, leftover.segments) });
  restarted.recover(leftover.records);
  restarted.record(record(5));
  t.same(readJournal(dir).records.map((r) => r.usage_key), ["req_1", "req_2", "req_3", "req_5"], "recovered records are not written twice");
  await restarted.flush();
  t.same(l.applied.map((r) => r.usage_key), ["req_1", "req_2", "req_3", "req_5"]);
  t.same(readJournal(dir).records, [], "the old segments went with the batch that held their records");
  await restarted.close();
});

t.test("a close with the ledger down leaves no retry timer behind, and later records are not taken", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "journal-"));
  const l = ledger();
  const scheduled: { cancelled: boolean }[] = [];
  const schedule: ScheduleFlush = () => {
    const entry = { cancelled: false };
    scheduled.push(entry);
    return () => void (entry.cancelled = true);
  };
  const recorder = new UsageRecorder(l.write, log, { schedule, journal: new UsageJournal(dir, log) });
  recorder.record(record(1));
  l.fail(true);
  await recorder.close();
  t.same(scheduled.filter((s) => !s.cancelled), [], "nothing left scheduled to keep the process alive");
  recorder.record(record(2));
  t.same(scheduled.filter((s) => !s.cancelled), [], "a record after close schedules nothing");
  t.same(readJournal(dir).records.map((r) => r.usage_key), ["req_1"], "the unapplied record waits in the journal for the next start");
});

t.test("grouped records of one event-loop turn share one write, on file when their promise settles", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "journal-"));
  const recorder = new UsageRecorder(ledger().write, log, { schedule: never, journal: new UsageJournal(dir, log) });
  const first = recorder.recordGrouped(record(1));
  const second = recorder.recordGrouped(record(2));
  t.ok(first instanceof Promise, "a grouped record is waited for");
  t.equal(second, first, "the same turn's records share the group's one write");
  t.same(readJournal(dir).records, [], "not written yet: the group is written at the end of the turn");
  await first;
  t.same(readJournal(dir).records.map((r) => r.usage_key), ["req_1", "req_2"], "both on file once the promise settles");
  const next = recorder.recordGrouped(record(3));
  t.not(next, first, "a later turn starts a new group");
  await next;
  t.same(readJournal(dir).records.map((r) => r.usage_key), ["req_1", "req_2", "req_3"]);
  await recorder.close();
});

t.test("a synchronous record writes the waiting group first, in call order", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "journal-"));
  const recorder = new UsageRecorder(ledger().write, log, { schedule: never, journal: new UsageJournal(dir, log) });
  const grouped = recorder.recordGrouped(record(1));
  recorder.record(record(2));
  t.same(readJournal(dir).records.map((r) => r.usage_key), ["req_1", "req_2"], "on file when record() returns");
  await grouped;
  t.same(readJournal(dir).records.map((r) => r.usage_key), ["req_1", "req_2"], "the group is not written twice");
  await recorder.close();
});

t.test("a flush takes the waiting group into the segment that goes with its batch", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "journal-"));
  const l = ledger();
  const recorder = new UsageRecorder(l.write, log, { schedule: never, journal: new UsageJournal(dir, log) });
  const grouped = recorder.recordGrouped(record(1));
  await recorder.flush();
  await grouped;
  t.same(l.applied.map((r) => r.usage_key), ["req_1"]);
  t.same(readJournal(dir).records, [], "nothing left to replay: the line went with its batch's segment, not into the next one");
  await recorder.close();
});
