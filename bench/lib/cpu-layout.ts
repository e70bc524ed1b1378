// Where benchmark processes run. By default the kernel places them. With
// --pin (where there are two CPUs or more and `taskset` exists) the server
// under test — Troupe, or the baseline it is compared with — gets CPU 1 to
// itself and the "outside world" (load generator, wrk, fake upstream)
// shares CPU 0: the usual practice of keeping the load generator off the
// system under test. Measured here it helps saturation figures (each server
// is limited by its own core only) but hurts fixed-rate tails (the world's
// processes queue behind each other on one core), so it is a diagnostic,
// not the default. Every target is measured under the same layout.
import { spawnSync } from "node:child_process";
import { availableParallelism } from "node:os";

export type CpuRole = "server" | "world";

let pinning = false;

/** Turns pinning on when asked and possible; returns whether it is on. */
export function configurePinning(wanted: boolean): boolean {
  pinning = wanted && availableParallelism() >= 2 && spawnSync("sh", ["-c", "command -v taskset"]).status === 0;
  return pinning;
}

/** The command line that runs `command args` on the role's CPU (unchanged when not pinning). */
export function onCpu(role: CpuRole, command: string, args: string[]): [string, string[]] {
  if (!pinning) return [command, args];
  return ["taskset", ["-c", role === "server" ? "1" : "0", command, ...args]];
}

export function describeLayout(): string {
  return pinning ? "pinned: server under test on CPU 1; load generator, wrk and fake upstream on CPU 0" : "not pinned (all processes share all CPUs)";
}
