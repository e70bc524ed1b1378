// The embedded ledger as the gateway uses it: on its own thread. The shared
// suite runs every ledger rule through the worker; then what the thread is
// for (the gateway's event loop does not do an append's work) and what
// happens when the thread dies.
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Worker } from "node:worker_threads";
import t from "tap";
import { EmbeddedLedgerStore } from "../../tenancy/embedded-ledger-store.ts";
import { ThreadedLedgerStore } from "../../tenancy/threaded-ledger-store.ts";
import { backgroundThreadNice } from "../../core/thread-priority.ts";
import { directoryTarget, ledgerSuite, usage } from "./ledger-store-suite.ts";

const newDir = () => mkdtempSync(join(tmpdir(), "troupe-ledger-thread-"));
ledgerSuite(t, directoryTarget("threaded", (dir) => new ThreadedLedgerStore(dir)));

/** The longest the event loop went without turning while `work` ran (a 1 ms timer chain). */
async function longestStall(work: () => Promise<unknown>): Promise<number> {
  let longest = 0;
  let last = performance.now();
  let running = true;
  const tick = () => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    if (running) setTimeout(tick, 1);
  };
  setTimeout(tick, 1);
  await work();
  running = false;
  return Math.max(longest, performance.now() - last);
}

const batch = (project: string) => Array.from({ length: 5000 }, (_, i) => usage({ project_id: project, api_key_id: `key_${i % 50}`, environment_id: `env_${i % 7}` }));

// Compared side by side in one run (never against a fixed time): the same
// 5,000-record append on this thread stalls the loop for the whole append.
t.test("threaded: an append's work does not stall the caller's event loop", async (t) => {
  const here = new EmbeddedLedgerStore(newDir());
  const threaded = new ThreadedLedgerStore(newDir());
  t.teardown(async () => {
    await here.close();
    await threaded.close();
  });
  await threaded.spent("prj_warm", "2026-03"); // the worker has started
  const onThisThread = await longestStall(() => here.append(batch("prj_here")));
  const onItsThread = await longestStall(() => threaded.append(batch("prj_there")));
  t.equal(await threaded.spent("prj_there", "2026-03"), 5000 * 1000, "the whole batch is billed");
  t.ok(onItsThread < onThisThread / 4, `longest stall ${onItsThread.toFixed(1)} ms on its own thread vs ${onThisThread.toFixed(1)} ms on this one`);
});

/** The nice value of each of this process's threads, by thread id (/proc/self/task/<tid>/stat's 19th field). */
function threadNiceValues(): Map<number, number> {
  const nice = new Map<number, number>();
  for (const tid of readdirSync("/proc/self/task")) {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces) start at field 3: nice is field 19.
    nice.set(Number(tid), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]));
  }
  return nice;
}

// Linux keeps a nice value per thread (the ledger renices its own); the test runs where CI does.
t.test("threaded: the ledger thread runs below the gateway's priority, and only it does", async (t) => {
  const ownNice = threadNiceValues().get(process.pid) ?? Number.NaN;
  // Threads whose priority differs from the process's: the renice's doing. Under `nice 15` there
  // must be none (the helper never raises a priority); at the default 0, the ledger's at 10.
  const reniced = () => [...threadNiceValues()].filter(([, nice]) => nice !== ownNice);
  const expectedMore = ownNice < backgroundThreadNice ? 1 : 0;
  const before = reniced();
  const store = new ThreadedLedgerStore(newDir());
  t.teardown(() => store.close());
  await store.spent("prj_nice", "2026-03"); // the worker has started and answered
  const after = reniced();
  t.equal(after.length, before.length + expectedMore, `${expectedMore} more thread(s) away from the process's nice ${ownNice} (before: ${before.length}, after: ${after.length})`);
  t.ok(
    after.every(([, nice]) => nice === backgroundThreadNice),
    `each reniced thread is at nice ${backgroundThreadNice}: ${after.map(([tid, nice]) => `${tid}@${nice}`).join(", ")}`,
  );
  t.equal(threadNiceValues().get(process.pid), ownNice, "the gateway's own thread keeps its priority");
  await store.append([usage({ project_id: "prj_nice" })]);
  t.equal(await store.spent("prj_nice", "2026-03"), 1000, "the lowered thread still bills");
});

t.test("threaded: a dead ledger thread fails the calls it held; the next call starts a new one on the same data", async (t) => {
  const store = new ThreadedLedgerStore(newDir());
  t.teardown(() => store.close());
  await store.append([usage({ project_id: "prj_dies" })]);
  // Test-only reach into the private worker: nothing public kills it, which is the point.
  const worker = (store as unknown as { worker: Worker }).worker;
  const held = store.append(batch("prj_dies"));
  void worker.terminate();
  await t.rejects(held, /ledger thread exited/, "the call in flight fails (the recorder retries it)");
  t.equal(await store.spent("prj_dies", "2026-03"), 1000, "a new thread reads what was committed before");
  await store.append([usage({ project_id: "prj_dies" })]);
  t.equal(await store.spent("prj_dies", "2026-03"), 2000);
});

t.test("threaded: errors cross back as errors; closed is closed", async (t) => {
  const store = new ThreadedLedgerStore(newDir());
  // A record lmdb cannot key: the worker's error is the caller's rejection.
  await t.rejects(store.append([usage({ project_id: "prj_bad", created_at: 42 as unknown as string })]));
  await store.close();
  await t.rejects(store.spent("prj_bad", "2026-03"), /closed/);
  await store.close();
});

// The worker is unreferenced while idle (a server's idle ledger must not keep
// it alive) and referenced while a call waits: a script that only awaits the
// ledger must still get its answer rather than exit with the call unanswered.
t.test("threaded: a process waiting only on the ledger waits for its answer; an idle one exits", async (t) => {
  const { spawnSync } = await import("node:child_process");
  const module = new URL("../../tenancy/threaded-ledger-store.ts", import.meta.url).href;
  const script = [
    `import { ThreadedLedgerStore } from ${JSON.stringify(module)};`,
    `const store = new ThreadedLedgerStore(${JSON.stringify(newDir())});`,
    `await store.append([${JSON.stringify(usage({ project_id: "prj_script" }))}]);`,
    `console.log("spent", await store.spent("prj_script", "2026-03"));`,
    // no close: the idle worker must not hold the process open
  ].join("\n");
  const file = join(newDir(), "script.mjs");
  writeFileSync(file, script);
  const run = spawnSync(process.execPath, [file], { encoding: "utf8", timeout: 30_000 });
  t.equal(run.stdout.trim(), "spent 1000", run.stderr);
  t.equal(run.status, 0, "exited by itself once idle");
});
