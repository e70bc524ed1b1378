// At most N compositions at once per process (N = the cores): with many
// jobs finishing together, running every ffmpeg at once makes all of them
// slow (each gets a sliver of the CPU), so every job completes late; queued
// FIFO they complete one after the other and the median job is done much
// sooner. A job waiting here holds only its own actor. Embedded host only:
// under Dapr, daprd waits for in-flight turns when actors move between
// replicas, and a turn queued here for long stalled that rebalancing.
import { availableParallelism } from "node:os";

export type Limiter = <T>(work: () => Promise<T>) => Promise<T>;

export function createLimiter(slots = availableParallelism()): Limiter {
  let free = Math.max(1, slots);
  const waiting: (() => void)[] = [];
  return async (work) => {
    if (free > 0) free -= 1;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await work();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else free += 1;
    }
  };
}
