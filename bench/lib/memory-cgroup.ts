// `bench:agents --memory-limit-mib=N`: starts the embedded Troupe inside a
// memory cgroup of its own, limited to N MiB, as a container's memory limit
// would. Why: RSS counts the pages of lmdb's maps the process has touched,
// and at a million conversations those follow the store's size on disk
// (docs/benchmarks.md). They are clean page cache, which the kernel takes
// back when a cgroup reaches its limit; this shows whether Troupe keeps
// working inside the limit, and at what cost, instead of arguing it.
// Needs root and a writable memory controller (cgroup v1 or v2): anything
// else is an error naming what is missing, never a silent run without limit.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface MemoryCgroupReport {
  /** Most memory the cgroup was charged at once: anonymous plus page cache. */
  peakMiB: number;
  /** Processes the kernel killed for lack of memory in the cgroup. */
  oomKills: number;
}

export interface MemoryCgroup {
  readonly dir: string;
  /** The command that starts `command args` inside the cgroup (a shell joins it, then execs). */
  wrap(command: string, args: readonly string[]): { command: string; args: string[] };
  report(): MemoryCgroupReport;
  /** Removes the cgroup; call once its processes have exited. */
  remove(): void;
}

const mib = 1024 * 1024;

export function createMemoryCgroup(limitMiB: number): MemoryCgroup {
  if (!Number.isInteger(limitMiB) || limitMiB < 64) throw new Error(`--memory-limit-mib must be an integer ≥ 64, got ${limitMiB}`);
  const v2 = unifiedMemoryParent();
  const parent = v2 ?? v1MemoryParent();
  const dir = join(parent, `troupe-bench-${process.pid}`);
  try {
    mkdirSync(dir);
    writeFileSync(join(dir, v2 ? "memory.max" : "memory.limit_in_bytes"), String(limitMiB * mib));
  } catch (error) {
    throw new Error(`cannot create a memory cgroup under ${parent} (root and a writable memory controller are needed): ${(error as Error).message}`);
  }
  return {
    dir,
    wrap: (command, args) => ({ command: "/bin/sh", args: ["-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', dir, command, ...args] }),
    report: () => (v2 ? reportV2(dir) : reportV1(dir)),
    remove: () => rmdirSync(dir),
  };
}

/** The cgroup v2 directory of this process when its memory controller is enabled for children, else undefined. */
function unifiedMemoryParent(): string | undefined {
  const line = readFileSync("/proc/self/cgroup", "utf8").split("\n").find((l) => l.startsWith("0::"));
  if (!line) return undefined;
  for (const root of ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]) {
    const dir = join(root, line.slice(3));
    const control = join(dir, "cgroup.subtree_control");
    if (existsSync(control) && readFileSync(control, "utf8").split(/\s+/).includes("memory")) return dir;
  }
  return undefined;
}

function v1MemoryParent(): string {
  const line = readFileSync("/proc/self/cgroup", "utf8").split("\n").find((l) => l.split(":")[1]?.split(",").includes("memory"));
  const dir = line ? join("/sys/fs/cgroup/memory", line.split(":")[2] ?? "/") : "";
  if (!line || !existsSync(join(dir, "memory.limit_in_bytes"))) throw new Error("no memory cgroup controller found (neither cgroup v2 with memory delegated nor v1's memory hierarchy)");
  return dir;
}

function reportV1(dir: string): MemoryCgroupReport {
  return {
    peakMiB: Number(readFileSync(join(dir, "memory.max_usage_in_bytes"), "utf8")) / mib,
    oomKills: counter(readFileSync(join(dir, "memory.oom_control"), "utf8"), "oom_kill"),
  };
}

function reportV2(dir: string): MemoryCgroupReport {
  const peak = join(dir, "memory.peak");
  return {
    peakMiB: existsSync(peak) ? Number(readFileSync(peak, "utf8")) / mib : Number.NaN,
    oomKills: counter(readFileSync(join(dir, "memory.events"), "utf8"), "oom_kill"),
  };
}

/** The value of a `name value` line (absent: 0). */
function counter(text: string, name: string): number {
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(" ")[1]) : 0;
}
