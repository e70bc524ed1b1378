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

/** CPU milliseconds a process has used so far, its main thread apart from all its other threads (workers, lmdb, GC, libuv). */
export async function threadCpuMs(pid: number | undefined): Promise<{ main: number; others: number }> {
  const split = { main: NaN, others: 0 };
  if (!pid) return split;
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [])) {
    const text = await readFile(`/proc/${pid}/task/${tid}/stat`, "utf8").catch(() => "");
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    const ms = ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond;
    if (tid === String(pid)) split.main = ms;
    else split.others += ms;
  }
  return split;
}
