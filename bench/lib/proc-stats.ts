// What a benchmark reads about another process from Linux /proc: its CPU
// time (user + system, so a bench can divide it by the work done: CPU per
// turn stays comparable on a busy machine where wall-clock rates do not),
// its resident memory split into anonymous (the JS heap, buffers) and
// file-backed (lmdb's memory map: pages of the store the process touched,
// which the kernel can drop), and a directory's size on disk.
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";

/** Clock ticks per second of /proc/<pid>/stat's times (USER_HZ: 100 on Linux). */
const ticksPerSecond = 100;

/** User + system CPU seconds the process has used so far (NaN when unreadable). */
export async function cpuSeconds(pid: number | undefined): Promise<number> {
  if (!pid) return NaN;
  const text = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
  // Fields after the command name (which may contain spaces), from field 3 on: utime is field 14, stime 15.
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond;
}

export interface Memory {
  rssMiB: number;
  anonMiB: number;
  fileMiB: number;
  /** The most RSS the process has had (VmHWM). */
  peakMiB: number;
}

/** VmRSS, its anonymous and file-backed parts and its peak so far, in MiB. */
export async function memoryOf(pid: number | undefined): Promise<Memory> {
  const status = pid ? await readFile(`/proc/${pid}/status`, "utf8").catch(() => "") : "";
  const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN) / 1024;
  return { rssMiB: kib("VmRSS"), anonMiB: kib("RssAnon"), fileMiB: kib("RssFile"), peakMiB: kib("VmHWM") };
}

/** Bytes the files under `dir` occupy on disk (allocated blocks: lmdb files are sparse). */
export async function diskBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += await diskBytes(path);
    else if (entry.isFile()) total += (await stat(path)).blocks * 512;
  }
  return total;
}

/** One /proc file of each of a process's threads (`file` under /proc/<pid>/task/<tid>/), the main thread's marked; none when `pid` is unknown. */
async function threadFiles(pid: number | undefined, file: "stat" | "schedstat"): Promise<Array<{ main: boolean; text: string }>> {
  if (!pid) return [];
  const tids = await readdir(`/proc/${pid}/task`).catch(() => []);
  return Promise.all(tids.map(async (tid) => ({ main: tid === String(pid), text: await readFile(`/proc/${pid}/task/${tid}/${file}`, "utf8").catch(() => "") })));
}

/** CPU milliseconds a process has used so far, its main thread apart from all its other threads (workers, lmdb, GC, libuv). */
export async function threadCpuMs(pid: number | undefined): Promise<{ main: number; others: number }> {
  const split = { main: NaN, others: 0 };
  for (const { main, text } of await threadFiles(pid, "stat")) {
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    const ms = ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond;
    if (main) split.main = ms;
    else split.others += ms;
  }
  return split;
}

export interface ThreadTime {
  /** Milliseconds on a CPU. */
  ranMs: number;
  /** Milliseconds runnable but waiting for a CPU (on a run queue). */
  waitedMs: number;
}

/**
 * A process's scheduling so far (/proc/<pid>/task/<tid>/schedstat: time on
 * a CPU, time on a run queue), its main thread apart from the others. Over a
 * window, the main thread's time on a CPU says how busy its event loop was,
 * and its time waiting is latency no change to its own code removes: the
 * machine had no CPU free for it. A thread that has exited no longer counts.
 */
export async function threadSchedMs(pid: number | undefined): Promise<{ main: ThreadTime; others: ThreadTime }> {
  const split = { main: { ranMs: NaN, waitedMs: NaN }, others: { ranMs: 0, waitedMs: 0 } };
  for (const { main, text } of await threadFiles(pid, "schedstat")) {
    const [ranNs, waitedNs] = text.split(" ").map(Number);
    if (ranNs === undefined || waitedNs === undefined || Number.isNaN(ranNs) || Number.isNaN(waitedNs)) continue;
    const time = { ranMs: ranNs / 1e6, waitedMs: waitedNs / 1e6 };
    if (main) split.main = time;
    else {
      split.others.ranMs += time.ranMs;
      split.others.waitedMs += time.waitedMs;
    }
  }
  return split;
}

/** Jiffies of all CPUs so far, busy and in total (/proc/stat's first line; idle and iowait count as not busy). */
export async function machineCpuTicks(): Promise<{ busy: number; total: number }> {
  const line = (await readFile("/proc/stat", "utf8")).split("\n")[0] ?? "";
  const ticks = line.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = ticks.reduce((sum, t) => sum + t, 0);
  const idle = (ticks[3] ?? 0) + (ticks[4] ?? 0);
  return { busy: total - idle, total };
}
