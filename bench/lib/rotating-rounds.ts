// Side-by-side measurement on a shared machine: every target runs once per
// round, and each round starts one target later, so no target always runs
// first (cold) or right after a given neighbour (whose leftover work, such as
// a ledger flush, it would pay for).

/** Calls `run` for each target, `rounds` times, rotating the order by one each round. */
export async function inRotatingRounds<T>(targets: readonly T[], rounds: number, run: (target: T) => Promise<void> | void): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < targets.length; i++) await run(targets[(i + round) % targets.length] as T);
  }
}
