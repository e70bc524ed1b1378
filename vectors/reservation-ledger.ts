// This process's adds in flight, counted against an organization's quota
// whose stored part is read from a store that lags behind them (an
// Elasticsearch count sees a record only once its bulk request has been
// refreshed). A count started at ledger time T misses at most the records
// whose add was still open at T, so `held(org, T)` adds exactly those. The
// check and the reservation then happen in one synchronous step, which makes
// the quota exact within a process however many adds run at once; replicas
// sharing one index can overshoot it by the batches they add at the same
// moment (docs/api/embeddings-and-vector-index.md, "Limits").

interface Entry {
  organizationId: string;
  records: number;
  /** Ledger time once its records are visible to any later count; undefined while open. */
  settledAt: number | undefined;
}

export type Reservation = Readonly<Pick<Entry, "organizationId" | "records">>;

export class ReservationLedger {
  private now = 0;
  private readonly entries = new Set<Entry>();
  /** Ledger times at which counts still in flight started. */
  private readonly reads = new Set<number>();

  /** Call before reading the stored count; pass the result to held() and end(). */
  beginRead(): number {
    const at = ++this.now;
    this.reads.add(at);
    return at;
  }

  endRead(at: number): void {
    this.reads.delete(at);
    this.prune();
  }

  /** Records reserved for the organization that a count started at `readAt` may not include. */
  held(organizationId: string, readAt: number): number {
    let total = 0;
    for (const entry of this.entries) {
      if (entry.organizationId !== organizationId) continue;
      if (entry.settledAt === undefined || entry.settledAt > readAt) total += entry.records;
    }
    return total;
  }

  reserve(organizationId: string, records: number): Reservation {
    const entry: Entry = { organizationId, records, settledAt: undefined };
    this.entries.add(entry);
    return entry;
  }

  /** The reservation's records are visible to later counts (or were never written). */
  settle(reservation: Reservation): void {
    const entry = reservation as Entry;
    if (!this.entries.has(entry) || entry.settledAt !== undefined) return;
    entry.settledAt = ++this.now;
    this.prune();
  }

  /** Entries open or settled recently enough to matter (for tests). */
  get size(): number {
    return this.entries.size;
  }

  /** A settled entry matters only to counts that started before it settled. */
  private prune(): void {
    let oldestRead = Number.POSITIVE_INFINITY;
    for (const at of this.reads) oldestRead = Math.min(oldestRead, at);
    for (const entry of this.entries) {
      if (entry.settledAt !== undefined && entry.settledAt < oldestRead) this.entries.delete(entry);
    }
  }
}
