// What the benchmarks read from /proc to say what bounded a run: a process's
// time on a CPU and on a run queue, its main thread apart from its others,
// and how busy the whole machine was. Checked against work this test does
// itself: spinning its main thread, then a worker thread. Linux only, as the
// benchmarks are (they read /proc).
import { Worker } from "node:worker_threads";
import t from "tap";
import { machineCpuTicks, threadSchedMs } from "../../bench/lib/proc-stats.ts";

const spin = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

t.test("the main thread's time on a CPU is its own, apart from the other threads'", async (t) => {
  const before = await threadSchedMs(process.pid);
  const ticksBefore = await machineCpuTicks();
  spin(300);
  const after = await threadSchedMs(process.pid);
  const ticksAfter = await machineCpuTicks();
  const ran = after.main.ranMs - before.main.ranMs;
  const waited = after.main.waitedMs - before.main.waitedMs;
  // 300 ms of wall time is spent on a CPU or waiting for one (a busy machine takes some of it).
  t.ok(ran + waited >= 250 && ran + waited <= 1000, `ran ${ran.toFixed(0)} + waited ${waited.toFixed(0)} ms of a 300 ms spin`);
  t.ok(ran >= 30, `the spin ran on a CPU (${ran.toFixed(0)} ms)`);
  t.ok(after.others.ranMs - before.others.ranMs < ran, "the other threads did not do the spin");
  t.ok(ticksAfter.busy > ticksBefore.busy && ticksAfter.total > ticksBefore.total, "the machine's busy jiffies grew with the spin");
  t.ok(ticksAfter.busy - ticksBefore.busy <= ticksAfter.total - ticksBefore.total, "busy is part of the total");
});

t.test("a worker thread's spin counts among the other threads", async (t) => {
  const before = await threadSchedMs(process.pid);
  // The worker stays alive until terminated: an exited thread leaves /proc/<pid>/task, and its time with it.
  const worker = new Worker(
    "const { parentPort } = require('node:worker_threads'); const until = performance.now() + 300; while (performance.now() < until); parentPort.postMessage('done'); parentPort.on('message', () => {});",
    { eval: true },
  );
  await new Promise((resolve) => worker.once("message", resolve));
  const after = await threadSchedMs(process.pid);
  await worker.terminate();
  const others = after.others.ranMs + after.others.waitedMs - (before.others.ranMs + before.others.waitedMs);
  t.ok(others >= 250, `the other threads ran or waited ${others.toFixed(0)} ms (the worker's spin was 300 ms)`);
});

t.test("an unknown process reads as not measured", async (t) => {
  const none = await threadSchedMs(undefined);
  t.ok(Number.isNaN(none.main.ranMs) && Number.isNaN(none.main.waitedMs), "NaN, never 0");
});
