// The embedded ledger's write-behind helpers (tenancy/embedded-ledger-store.ts):
// lmdb databases written on lmdb's write thread, read back here until committed.
import type { Database } from "lmdb";

/**
 * One lmdb database written behind the main thread: `put` queues the write
 * (lmdb performs it on its write thread, batched with every other write of
 * the event turn) and keeps the value readable here until it is committed,
 * because lmdb's reads see committed data only. One process writes the
 * embedded ledger, so what it wrote last is the truth.
 */
export class WriteBehind<V> {
  readonly db: Database<V, string>;
  private readonly pending = new Map<string, { value: V; writes: number }>();

  constructor(db: Database<V, string>) {
    this.db = db;
  }

  get(key: string): V | undefined {
    const pending = this.pending.get(key);
    return pending ? pending.value : this.db.get(key);
  }

  /** The database was cleared: nothing written before reads back. */
  forgetAll(): void {
    this.pending.clear();
  }

  /** Queues the write; `commits` gets the promise of its commit and what to forget then. */
  put(key: string, value: V, commits: Commits): void {
    commits.last = this.db.put(key, value);
    const pending = this.pending.get(key);
    if (pending) {
      pending.value = value;
      pending.writes += 1;
    } else this.pending.set(key, { value, writes: 1 });
    commits.forget.push(() => {
      const written = this.pending.get(key);
      if (written && --written.writes === 0) this.pending.delete(key);
    });
  }
}

/** The writes of one append: lmdb commits in order, so the last one's promise is the whole append's. */
export interface Commits {
  last: Promise<boolean> | undefined;
  forget: Array<() => void>;
}

/** What one append adds to one aggregate row or one key's/environment's usage to date. */
export interface Counts {
  c: number;
  i: number;
  o: number;
  u: number;
  n: number;
  last: string;
}

export function countsOf(map: Map<string, Counts>, key: string): Counts {
  let counts = map.get(key);
  if (!counts) {
    counts = { c: 0, i: 0, o: 0, u: 0, n: 0, last: "" };
    map.set(key, counts);
  }
  return counts;
}
