// Which of the embedded ledger's per-call databases ("slots", generation
// % (G + 1)) holds which generation, and when each may be cleared
// (tenancy/embedded-ledger-store.ts; generations: tenancy/ledger-entry.ts).
// The map is kept in lmdb's `generations` database, so a restart clears what
// expired meanwhile. Each slot's deletion time is kept as a time, not only
// as a generation number: generation numbers count generation lengths, so
// under a new USAGE_RECORD_RETENTION_SECONDS (or G) they mean other times,
// while a time still says when the entries written before the change are due.
import type { Database } from "lmdb";
import { generationExpiresAtMs, generationMs, generationOf, generationStartMs, liveGenerations } from "./ledger-entry.ts";

/** How far the clock may step back between a call and its record's append (NTP) and still be deduplicated. */
const clockSkewMs = 60_000;

/** A slot's deletion time in a ledger that kept only generation numbers (halves of the window, three live). */
const legacyUntil = (generation: number, retentionMs: number) => (generation < 0 ? 0 : (generation + 3) * Math.max(1, Math.floor(retentionMs / 2)));

export class GenerationSlots {
  /** Slots: the live generations, or more when an earlier, coarser G left more (kept until they are due). */
  readonly count: number;
  /** The generation each slot holds (-1: empty; -2: written under another generation length). */
  private readonly generation: number[];
  /** When each slot's entries may be deleted (ms; 0: empty). */
  private readonly until: number[];

  private readonly meta: Database<number, string>;
  private readonly retentionMs: number;

  constructor(meta: Database<number, string>, retentionMs: number) {
    this.meta = meta;
    this.retentionMs = retentionMs;
    this.count = Math.max(liveGenerations, meta.get("slots") ?? 3);
    void meta.put("slots", this.count);
    const slots = Array.from({ length: this.count }, (_, i) => i);
    this.generation = slots.map((i) => meta.get(`slot-${i}`) ?? -1);
    this.until = slots.map((i) => meta.get(`until-${i}`) ?? legacyUntil(this.generation[i] ?? -1, retentionMs));
    if (meta.get("generation-ms") !== generationMs(retentionMs)) {
      // Another generation length: the numbers mean other times, so no slot may match a generation now. Written
      // down with the new length, and each slot's due time with it (an older ledger's is derived from its number):
      // a later restart would otherwise read the old numbers under it, and an append's idempotency check would
      // skip a slot that holds the call.
      for (const i of slots) {
        if (this.generation[i] === -1) continue;
        this.generation[i] = -2;
        void meta.put(`slot-${i}`, -2);
        void meta.put(`until-${i}`, this.until[i] ?? 0);
      }
      void meta.put("generation-ms", generationMs(retentionMs));
    }
  }

  /**
   * Brings the map to `nowMs`: `clear(slot, written)` empties each slot
   * whose entries are due (`written`: it holds some) before it is reused;
   * returns the current generation's slot. Entries not yet due in the slot
   * the current generation takes (only after a change of generation
   * length) stay, and go with that generation.
   */
  rotate(nowMs: number, clear: (slot: number, written: boolean) => void): number {
    const current = generationOf(nowMs, this.retentionMs);
    for (let i = 0; i < this.count; i++) {
      const held = this.generation[i] ?? -1;
      const isCurrent = i === current % liveGenerations;
      const due = (this.until[i] ?? 0) <= nowMs;
      if (held === (isCurrent ? current : -1) || (!isCurrent && !due)) continue;
      if (due) clear(i, held !== -1);
      this.generation[i] = isCurrent ? current : -1;
      this.until[i] = isCurrent ? Math.max(due ? 0 : (this.until[i] ?? 0), generationExpiresAtMs(current, this.retentionMs)) : 0;
      void this.meta.put(`slot-${i}`, this.generation[i] ?? -1);
      void this.meta.put(`until-${i}`, this.until[i] ?? 0);
    }
    return current % liveGenerations;
  }

  /**
   * Whether a slot may hold the entry of a call made at `createdAtMs`: an
   * entry is written in the generation current when it is appended, never
   * before its call was made, so a slot whose generation had ended by then
   * cannot (give or take `clockSkewMs` of the clock stepping back). An
   * append reads only these, usually the current slot alone, for its
   * idempotency check.
   */
  mayHold(slot: number, createdAtMs: number): boolean {
    const held = this.generation[slot] ?? -1;
    if (held === -1) return false;
    // -2: written under another generation length, its times unknown; an unparsable time: every slot.
    if (held === -2 || Number.isNaN(createdAtMs)) return true;
    return createdAtMs < generationStartMs(held + 1, this.retentionMs) + clockSkewMs;
  }

  /** Whether a slot's entries are still within their window (an expired slot not swept yet reads as empty). */
  live(slot: number, nowMs: number): boolean {
    return (this.until[slot] ?? 0) > nowMs;
  }
}
