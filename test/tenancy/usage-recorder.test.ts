// The durable usage sink: records come back per project after a flush,
// recording never touches the store on the request path, and a failed flush
// keeps its records for a later one. Time is a manual clock and a manual
// flush scheduler, so nothing here depends on how fast the machine is.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { systemClock } from "../../core/clock.ts";
import { createLogger } from "../../core/log.ts";
import type { UsageRecord } from "../../providers/usage.ts";
import { EmbeddedDataStore } from "../../tenancy/embedded-data-store.ts";
import type { StoreOp, DataStore } from "../../tenancy/data-store.ts";
import { flushEveryMs, retryFlushAfterMs, UsageRecorder, type ScheduleFlush } from "../../tenancy/usage-recorder.ts";

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
    request_id: `req_${i}`,
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
  /** Runs every live scheduled flush (as their timers would) and waits for the store writes. */
  const fire = async (recorder: UsageRecorder) => {
    for (const p of live()) {
      p.cancelled = true;
      p.run();
    }
    await recorder.flush();
  };
  return { schedule, live, fire };
}

/** Counts the writes that reach the wrapped store; `failNext` makes the next one fail. */
function countingStore(inner: DataStore) {
  const writes: StoreOp[][] = [];
  let failNext = false;
  const store: DataStore = Object.create(inner) as DataStore;
  store.apply = async (ops) => {
    writes.push(ops);
    if (failNext) {
      failNext = false;
      throw new Error("store unavailable");
    }
    return inner.apply(ops);
  };
  return { store, writes, failNextWrite: () => void (failNext = true) };
}

t.test("records are stored durably and read back per project", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-usage-"));
  const inner = new EmbeddedDataStore(dir, systemClock);
  const { store, writes } = countingStore(inner);
  const timers = manualSchedule();
  const recorder = new UsageRecorder(store, createLogger("silent"), { clock: { now: () => 1_700_000_000_000 }, schedule: timers.schedule });
  for (let i = 0; i < 1000; i++) recorder.record(record(i % 3 === 0 ? "prj_a" : "prj_b", i));
  await new Promise((resolve) => setImmediate(resolve)); // any write record() started would have reached the store by now
  t.equal(writes.length, 0, "recording 1,000 calls wrote nothing to the store (the request path never waits for it)");
  t.same(timers.live().map((p) => p.ms), [flushEveryMs], "one flush scheduled for the whole burst");
  await timers.fire(recorder);
  t.equal(writes.length, 1, "one store write for the whole burst");
  t.match(writes[0], [{ op: "put" }, { op: "index", key: "project-usage:prj_a", score: 1_700_000_000_000 }, { op: "index", key: "project-usage:prj_b", score: 1_700_000_000_000 }]);
  await recorder.close();
  t.equal(writes.length, 1, "closing with nothing buffered writes nothing");
  await inner.close();

  const reopened = new EmbeddedDataStore(dir, systemClock);
  const readProject = async (project: string): Promise<UsageRecord[]> => {
    const page = await reopened.page(`project-usage:${project}`, 100);
    const batches = (await reopened.getMany(page.members.map((id) => `usage-batch:${id}`))) as UsageRecord[][];
    return batches.flat().filter((u) => u.project_id === project);
  };
  const a = await readProject("prj_a");
  const b = await readProject("prj_b");
  t.equal(a.length, 334);
  t.equal(b.length, 666);
  t.same(new Set([...a, ...b].map((u) => u.request_id)).size, 1000, "every call recorded exactly once");
  t.match(a[0], { category: "chat", model: "gpt-4.1-mini", provider: "openai", organization_id: "org_1" });
  await reopened.close();
});

t.test("a failed flush keeps its records and retries later; close flushes what is left", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-usage-"));
  const inner = new EmbeddedDataStore(dir, systemClock);
  const { store, writes, failNextWrite } = countingStore(inner);
  const timers = manualSchedule();
  const recorder = new UsageRecorder(store, createLogger("silent"), { schedule: timers.schedule });
  recorder.record(record("prj_a", 1));
  failNextWrite();
  await timers.fire(recorder);
  t.equal(writes.length, 1, "the write was attempted");
  t.same(timers.live().map((p) => p.ms), [retryFlushAfterMs], "a retry is scheduled with a longer delay");
  recorder.record(record("prj_a", 2));
  t.equal(timers.live().length, 1, "a new record does not schedule a second flush");
  await recorder.close();
  t.equal(writes.length, 2);
  t.same(timers.live(), [], "close cancelled the scheduled retry");
  const put = writes[1]!.find((op) => op.op === "put");
  t.same((put as { value: UsageRecord[] }).value.map((u) => u.request_id), ["req_1", "req_2"], "the failed batch is written first, then the newer record");
  await inner.close();
});
