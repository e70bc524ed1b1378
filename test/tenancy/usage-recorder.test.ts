// The durable usage sink: records land in the ledger after a flush,
// recording never touches the store on the request path, and a failed flush
// keeps its records for a later one. Time is a manual clock and a manual
// flush scheduler, so nothing here depends on how fast the machine is.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { createLogger } from "../../core/log.ts";
import type { UsageRecord } from "../../providers/usage.ts";
import { EmbeddedLedgerStore } from "../../tenancy/embedded-ledger-store.ts";
import { flushAtRecords, flushEveryMs, retryFlushAfterMs, UsageRecorder, type ScheduleFlush } from "../../tenancy/usage-recorder.ts";

function record(project: string, i: number): UsageRecord {
  return {
    organization_id: "org_1",
    project_id: project,
    environment_id: "env_1",
    api_key_id: "key_1",
    live: i % 2 === 0,
    category: "chat",
    model: "gpt-4.1-mini",
    provider: "openai",
    input_tokens: 10 + i,
    output_tokens: 5,
    units: 0,
    cost_usd: 0.0001 * i,
    cost_nanos: 100_000 * i,
    request_id: `req_${i}`,
    usage_key: `req_${i}`,
    created_at: "2026-01-01T00:00:00.000Z",
  };
}

/** A flush scheduler the test runs by hand: what was scheduled, after how long, cancelled or not. */
function manualSchedule() {
  const pending: { run: () => void; ms: number; cancelled: boolean }[] = [];
  const schedule: ScheduleFlush = (run, ms) => {
    const entry = { run, ms, cancelled: false };
    pending.push(entry);
    return () => void (entry.cancelled = true);
  };
  const live = () => pending.filter((p) => !p.cancelled);
  /** Runs every live scheduled flush, as their timers would. */
  const runDue = () => {
    for (const p of live()) {
      p.cancelled = true;
      p.run();
    }
  };
  /** Runs every live scheduled flush and waits for the store writes. */
  const fire = async (recorder: UsageRecorder) => {
    runDue();
    await recorder.flush();
  };
  return { schedule, live, runDue, fire };
}

/** Counts the writes that reach the ledger; `failNext` makes the next one fail. */
function countingLedger(ledger: EmbeddedLedgerStore) {
  const writes: UsageRecord[][] = [];
  let failNext = false;
  const write = async (batch: UsageRecord[]) => {
    writes.push(batch);
    if (failNext) {
      failNext = false;
      throw new Error("ledger unavailable");
    }
    await ledger.append(batch);
  };
  return { write, writes, failNextWrite: () => void (failNext = true) };
}

t.test("records land in the ledger durably, aggregated per project", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-usage-"));
  const ledger = new EmbeddedLedgerStore(dir);
  const { write, writes } = countingLedger(ledger);
  const timers = manualSchedule();
  const recorder = new UsageRecorder(write, createLogger("silent"), { schedule: timers.schedule });
  const calls = flushAtRecords + 976; // past flushAtRecords: an early flush
  for (let i = 0; i < calls; i++) recorder.record(record(i % 3 === 0 ? "prj_a" : "prj_b", i));
  await new Promise((resolve) => setImmediate(resolve)); // any write record() started would have reached the ledger by now
  t.equal(writes.length, 0, "recording 2,000 calls wrote nothing (the request path never waits for it)");
  t.same(timers.live().map((p) => p.ms), [0], "one flush scheduled for the whole burst, on the next timer turn (past flushAtRecords)");
  await timers.fire(recorder);
  t.equal(writes.length, 1, "one ledger append for the whole burst");
  t.equal(writes[0]!.length, calls);
  await recorder.close();
  t.equal(writes.length, 1, "closing with nothing buffered writes nothing");
  await ledger.close();

  const reopened = new EmbeddedLedgerStore(dir);
  const callsOf = async (project: string) => (await reopened.usageRows(project, "2026-01", "2026-01")).reduce((n, r) => n + r.calls, 0);
  t.equal(await callsOf("prj_a"), Math.ceil(calls / 3));
  t.equal(await callsOf("prj_b"), calls - Math.ceil(calls / 3));
  let liveNanos = 0;
  for (let i = 0; i < calls; i += 3) if (i % 2 === 0) liveNanos += 100_000 * i;
  t.equal(await reopened.spent("prj_a", "2026-01"), liveNanos, "live costs counted once, exactly");
  await reopened.close();
});

t.test("a failed flush keeps its records and retries later; close flushes what is left", async (t) => {
  const ledger = new EmbeddedLedgerStore(mkdtempSync(join(tmpdir(), "troupe-usage-")));
  const { write, writes, failNextWrite } = countingLedger(ledger);
  const timers = manualSchedule();
  const recorder = new UsageRecorder(write, createLogger("silent"), { schedule: timers.schedule });
  recorder.record(record("prj_a", 1));
  failNextWrite();
  await timers.fire(recorder);
  t.equal(writes.length, 1, "the write was attempted");
  t.same(timers.live().map((p) => p.ms), [retryFlushAfterMs], "a retry is scheduled with a longer delay");
  recorder.record(record("prj_a", 2));
  t.equal(timers.live().length, 1, "a new record does not schedule a second flush");
  for (let i = 3; i < 3 + flushAtRecords * 3; i++) recorder.record(record("prj_a", i));
  t.same(timers.live().map((p) => p.ms), [retryFlushAfterMs], "nor do many: a failing store is not flushed early");
  await recorder.close();
  t.equal(writes.length, 2);
  t.same(timers.live(), [], "close cancelled the scheduled retry");
  const newer = Array.from({ length: 1 + flushAtRecords * 3 }, (_, i) => `req_${i + 2}`);
  t.same(writes[1]!.map((u) => u.request_id), ["req_1", ...newer], "the failed batch is written first, then the newer records");
  await ledger.close();
});

t.test("under load a flush starts at flushAtRecords, one write at a time, then the next", async (t) => {
  const ledger = new EmbeddedLedgerStore(mkdtempSync(join(tmpdir(), "troupe-usage-")));
  const writes: UsageRecord[][] = [];
  /** One per write that reached the ledger, to let it answer. */
  const releases: Array<() => void> = [];
  const held = async (n: number) => {
    while (releases.length < n) await new Promise((resolve) => setImmediate(resolve));
  };
  const write = async (batch: UsageRecord[]) => {
    writes.push(batch);
    await ledger.append(batch);
    await new Promise<void>((resolve) => releases.push(resolve));
  };
  const timers = manualSchedule();
  const recorder = new UsageRecorder(write, createLogger("silent"), { schedule: timers.schedule });
  for (let i = 0; i < flushAtRecords - 1; i++) recorder.record(record("prj_a", i));
  t.same(timers.live().map((p) => p.ms), [flushEveryMs], "below flushAtRecords: the timer's flush");
  recorder.record(record("prj_a", flushAtRecords - 1));
  t.same(timers.live().map((p) => p.ms), [0], "at flushAtRecords: replaced by one on the next timer turn");
  timers.runDue();
  await new Promise((resolve) => setImmediate(resolve));
  await held(1);
  t.equal(writes.length, 1);
  t.equal(writes[0]!.length, flushAtRecords);
  for (let i = flushAtRecords; i < flushAtRecords * 3; i++) recorder.record(record("prj_a", i));
  t.same(timers.live().map((p) => p.ms), [flushEveryMs], "while a write is on its way, records wait for it (no early flush beside it)");
  releases[0]!();
  await new Promise((resolve) => setImmediate(resolve));
  t.same(timers.live().map((p) => p.ms), [0], "its end starts the next early flush");
  timers.runDue();
  await held(2);
  t.equal(writes.length, 2);
  t.equal(writes[1]!.length, flushAtRecords * 2, "everything that waited goes in one write");
  releases[1]!();
  await recorder.close();
  t.equal((await ledger.usageRows("prj_a", "2026-01", "2026-01")).reduce((n, r) => n + r.calls, 0), flushAtRecords * 3);
  await ledger.close();
});
