// The embedded ledger's thread (tenancy/ledger-worker.ts) run in process:
// node:worker_threads' parentPort and workerData are replaced (through
// syncBuiltinESMExports) by a port the test speaks to, so each import of the
// module is one "thread" whose code the mutation run can see, and Node's mock
// setInterval steps its sweeper. What it proves: the module refuses to run
// without a parent port (with its message); it answers each call by id with
// the store method's value, a call of no ledger method and a method that
// throws with an Error (the method's own), never leaving a call unanswered;
// its sweeper runs every eighth of the retention, never more often than each
// second nor less often than each minute. Its lowered priority is the
// threaded store's tests' (test/tenancy/threaded-ledger-store.test.ts).
import { EventEmitter } from "node:events";
import { mkdtempSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { mock } from "node:test";
import workerThreads from "node:worker_threads";
import t, { type Test } from "tap";
import { EmbeddedLedgerStore } from "../../tenancy/embedded-ledger-store.ts";
import type { LedgerReply } from "../../tenancy/ledger-rpc.ts";
import type { StoredBudget } from "../../tenancy/ledger.ts";

const moduleUrl = new URL("../../tenancy/ledger-worker.ts", import.meta.url).href;
let imports = 0;
/** A fresh instance of the module (its own port, store and sweeper). */
const importWorker = (): Promise<unknown> => import(`${moduleUrl}?instance=${++imports}`);

class FakePort extends EventEmitter {
  readonly replies: LedgerReply[] = [];
  private readonly waiting = new Map<number, (reply: LedgerReply) => void>();
  postMessage(reply: LedgerReply): void {
    this.replies.push(reply);
    this.waiting.get(reply.id)?.(reply);
  }
  call(id: number, method: unknown, args: unknown[]): Promise<LedgerReply> {
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.emit("message", { id, method, args });
    });
  }
}

/** Counts the sweeps of every embedded ledger store (the worker's included). */
function countSweeps(t: Test): { count: number } {
  const counter = { count: 0 };
  const real = Object.getOwnPropertyDescriptor(EmbeddedLedgerStore.prototype, "sweep");
  const sweep = EmbeddedLedgerStore.prototype.sweep;
  EmbeddedLedgerStore.prototype.sweep = function (this: EmbeddedLedgerStore) {
    counter.count += 1;
    return sweep.call(this);
  };
  t.teardown(() => {
    if (real) Object.defineProperty(EmbeddedLedgerStore.prototype, "sweep", real);
  });
  return counter;
}

/** Imports the module as a thread of `retentionMs`, on a mock setInterval; its store closed at teardown. */
async function startWorker(t: Test, retentionMs: number): Promise<FakePort> {
  const port = new FakePort();
  mock.timers.enable({ apis: ["setInterval"] });
  const real = { parentPort: workerThreads.parentPort, workerData: workerThreads.workerData as unknown };
  Object.assign(workerThreads, { parentPort: port, workerData: { dataDir: mkdtempSync(join(tmpdir(), "troupe-ledger-worker-")), retentionMs } });
  syncBuiltinESMExports();
  t.teardown(async () => {
    await port.call(1_000_000, "close", []);
    mock.timers.reset();
  });
  try {
    await importWorker();
  } finally {
    Object.assign(workerThreads, real);
    syncBuiltinESMExports();
  }
  return port;
}

t.test("without a parent port the module refuses to run", async (t) => {
  await t.rejects(importWorker(), { message: "tenancy/ledger-worker.ts runs as a worker thread (threaded-ledger-store.ts starts it)" });
});

t.test("each call is answered by id: values, an unknown method, a method that throws", async (t) => {
  const port = await startWorker(t, 86_400_000);
  const budget: StoredBudget = { monthly_limit_usd: 2, alert_thresholds: [0.5], hard_limit: true, updated_at: "2026-03-01T00:00:00.000Z" };
  t.strictSame(await port.call(1, "putBudget", ["prj_w", budget]), { id: 1, ok: true, value: undefined });
  t.strictSame(await port.call(2, "getBudget", ["prj_w"]), { id: 2, ok: true, value: budget });
  t.strictSame(await port.call(3, "spent", ["prj_w", "2026-03"]), { id: 3, ok: true, value: 0 });
  const unknown = await port.call(4, "kind", []);
  if (unknown.ok) return t.fail("kind is no method");
  t.equal(unknown.id, 4);
  t.ok(unknown.error instanceof Error);
  t.equal(unknown.error.message, "unknown ledger method kind");
  const numbered = await port.call(5, 42, []);
  if (numbered.ok) return t.fail("42 is no method");
  t.equal(numbered.error.message, "unknown ledger method 42");
  const thrown = await port.call(6, "release", []);
  if (thrown.ok) return t.fail("a method that throws is answered with its error");
  t.equal(thrown.id, 6);
  t.ok(thrown.error instanceof TypeError, "the method's own error, not a wrapped one");
  t.match(thrown.error.message, /^Cannot read properties of undefined \(reading 'project_id'\)$/);
  t.strictSame(
    port.replies.map((reply) => [reply.id, reply.ok]),
    [
      [1, true],
      [2, true],
      [3, true],
      [4, false],
      [5, false],
      [6, false],
    ],
  );
});

t.test("the sweeper runs every eighth of the retention", async (t) => {
  const sweeps = countSweeps(t);
  await startWorker(t, 40_000);
  const opened = sweeps.count;
  mock.timers.tick(4_999);
  t.equal(sweeps.count, opened, "not before 5 s");
  mock.timers.tick(1);
  t.equal(sweeps.count, opened + 1, "at 5 s");
  mock.timers.tick(5_000);
  t.equal(sweeps.count, opened + 2, "and every 5 s");
});

t.test("the sweeper runs at most each second", async (t) => {
  const sweeps = countSweeps(t);
  await startWorker(t, 4_000);
  const opened = sweeps.count;
  mock.timers.tick(999);
  t.equal(sweeps.count, opened, "not at an eighth (500 ms), nor before 1 s");
  mock.timers.tick(1);
  t.equal(sweeps.count, opened + 1, "at 1 s");
});

t.test("the sweeper runs at least each minute", async (t) => {
  const sweeps = countSweeps(t);
  await startWorker(t, 8 * 3_600_000);
  const opened = sweeps.count;
  mock.timers.tick(59_999);
  t.equal(sweeps.count, opened, "not before a minute");
  mock.timers.tick(1);
  t.equal(sweeps.count, opened + 1, "at a minute, not at an eighth (an hour)");
});
