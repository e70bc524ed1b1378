// Which generation hashes of each project a replica of the Redis ledger
// knows to be live (tenancy/redis-ledger-store.ts). The project's generation
// index in Redis is the truth (redis-ledger-scripts.ts); a script must name
// the keys it reads, so the replica names the hashes it knows, and learns
// the ones it did not from the append script's refusal. A hash written
// under another retention (or by another replica) is learnt once, then
// named in every append until it is due.
export class KnownGenerations {
  /** Per project: hash name → when it is due (ms). Projects without a live hash are dropped. */
  private readonly byProject = new Map<string, Map<string, number>>();

  /** The hashes to name for a project at `nowMs`: `current` first (where new entries go), then every other one not yet due. */
  live(projectId: string, nowMs: number, current: string): string[] {
    const known = this.byProject.get(projectId);
    const names = [current];
    for (const [name, dueMs] of known ?? []) {
      if (dueMs <= nowMs) known?.delete(name);
      else if (name !== current) names.push(name);
    }
    if (known?.size === 0) this.byProject.delete(projectId);
    return names;
  }

  learn(projectId: string, name: string, dueMs: number): void {
    const known = this.byProject.get(projectId) ?? new Map<string, number>();
    known.set(name, Math.max(dueMs, known.get(name) ?? 0));
    this.byProject.set(projectId, known);
  }
}
