// The embedded ledger's map of generation slots on a real lmdb database of
// its own, driven by times handed in (never today's date): which slot the
// clock's generation takes, which slots are cleared and when (each boundary
// at its millisecond), what a slot may hold for the idempotency check, and
// what a restart, a new generation length or an older ledger's map reads
// as. The store tests reach this only through whole appends; these cases
// were found by mutation testing (docs/testing.md).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { open, type Database } from "lmdb";
import t, { type Test } from "tap";
import { GenerationSlots } from "../../tenancy/ledger-slots.ts";

/** 400 s windows: 100 s generations, so the 60 s of clock skew stays inside one. Generation g expires at (g + 5) × 100 s. */
const retentionMs = 400_000;
const gen = 100_000;

function metaDb(t: Test): Database<number, string> {
  const root = open({ path: join(mkdtempSync(join(tmpdir(), "troupe-slots-")), "meta.lmdb"), compression: false });
  t.teardown(() => root.close());
  return root.openDB<number, string>({ name: "generations", encoding: "msgpack" });
}

/** The clear calls a rotation makes, in order: [slot, written]. */
function clearLog(): { calls: Array<[number, boolean]>; clear: (slot: number, written: boolean) => void } {
  const calls: Array<[number, boolean]> = [];
  return { calls, clear: (slot, written) => void calls.push([slot, written]) };
}

/** What the map wrote down, once committed: slot → [generation, until]. */
async function stored(meta: Database<number, string>, count: number): Promise<Array<[number | undefined, number | undefined]>> {
  await meta.committed;
  return Array.from({ length: count }, (_, i) => [meta.get(`slot-${i}`), meta.get(`until-${i}`)]);
}

/** Fills slots 0–4 with generations 0–4 (due at 500 s … 900 s). */
function fill(slots: GenerationSlots, clear: (slot: number, written: boolean) => void): void {
  for (let g = 0; g < 5; g++) slots.rotate(g * gen, clear);
}

t.test("a new map: five empty slots, written down with the generation length", async (t) => {
  const meta = metaDb(t);
  const slots = new GenerationSlots(meta, retentionMs);
  t.equal(slots.count, 5);
  for (let i = 0; i < 5; i++) {
    t.equal(slots.mayHold(i, 0), false, `slot ${i} holds nothing`);
    t.equal(slots.mayHold(i, Number.NaN), false, `slot ${i} holds nothing, whatever the time`);
    t.equal(slots.live(i, 0), false, `slot ${i} is not live`);
  }
  await meta.committed;
  t.equal(meta.get("slots"), 5);
  t.equal(meta.get("generation-ms"), gen);
});

t.test("the clock's generation takes its slot; a slot is cleared at its due time, not a millisecond before", async (t) => {
  const meta = metaDb(t);
  const slots = new GenerationSlots(meta, retentionMs);
  const { calls, clear } = clearLog();
  t.equal(slots.rotate(0, clear), 0);
  t.strictSame(calls, [[0, false]], "the empty slot is made ready, with nothing written to drop");
  t.equal(slots.live(0, 499_999), true);
  t.equal(slots.live(0, 500_000), false, "generation 0 is due once generation 5 begins");
  t.equal(slots.rotate(99_999, clear), 0, "the same generation: the same slot");
  t.equal(slots.rotate(100_000, clear), 1);
  t.equal(slots.rotate(250_000, clear), 2);
  t.equal(slots.rotate(300_000, clear), 3);
  t.equal(slots.rotate(499_999, clear), 4);
  t.strictSame(calls, [[0, false], [1, false], [2, false], [3, false], [4, false]], "each slot readied once, none cleared");
  t.strictSame(await stored(meta, 5), [[0, 500_000], [1, 600_000], [2, 700_000], [3, 800_000], [4, 900_000]]);
  t.equal(slots.rotate(500_000, clear), 0, "generation 5 takes slot 0 back");
  t.strictSame(calls.slice(5), [[0, true]], "generation 0's entries are dropped");
  t.equal(slots.live(0, 999_999), true);
  t.equal(slots.live(0, 1_000_000), false);
  t.strictSame(await stored(meta, 5), [[5, 1_000_000], [1, 600_000], [2, 700_000], [3, 800_000], [4, 900_000]]);
  t.equal(slots.rotate(600_000, clear), 1);
  t.strictSame(calls.slice(6), [[1, true]]);
});

t.test("a jump over several generations clears each due slot once and empties those not reused", async (t) => {
  const meta = metaDb(t);
  const slots = new GenerationSlots(meta, retentionMs);
  const { calls, clear } = clearLog();
  fill(slots, clear);
  calls.length = 0;
  // 750 s: generation 7, slot 2. Slots 0 and 1 (due 500 s, 600 s) are dropped and left empty; 3 and 4 are not due.
  t.equal(slots.rotate(750_000, clear), 2);
  t.strictSame(calls, [[0, true], [1, true], [2, true]]);
  t.strictSame(await stored(meta, 5), [[-1, 0], [-1, 0], [7, 1_200_000], [3, 800_000], [4, 900_000]]);
  t.equal(slots.mayHold(0, 0), false, "an emptied slot holds nothing");
  t.equal(slots.live(0, 750_000), false);
  t.equal(slots.mayHold(3, 0), true, "generation 3 is kept until it is due");
  t.equal(slots.live(3, 799_999), true);
  t.equal(slots.rotate(750_001, clear), 2);
  t.equal(slots.rotate(799_999, clear), 2);
  t.strictSame(calls, [[0, true], [1, true], [2, true]], "empty and not-yet-due slots are left alone");
  t.equal(slots.rotate(800_000, clear), 3, "generation 8 takes slot 3 as it falls due");
  t.strictSame(calls.slice(3), [[3, true]]);
  t.strictSame(await stored(meta, 5), [[-1, 0], [-1, 0], [7, 1_200_000], [8, 1_300_000], [4, 900_000]]);
});

t.test("a slot may hold the calls made before its generation ended, give or take a minute of skew", async (t) => {
  const meta = metaDb(t);
  const slots = new GenerationSlots(meta, retentionMs);
  const { clear } = clearLog();
  fill(slots, clear);
  // Generation 2 (200–300 s) in slot 2: calls made before 300 s + 60 s.
  t.equal(slots.mayHold(2, 0), true);
  t.equal(slots.mayHold(2, 359_999), true);
  t.equal(slots.mayHold(2, 360_000), false, "made after its generation ended (and the skew): never in it");
  t.equal(slots.mayHold(0, 159_999), true);
  t.equal(slots.mayHold(0, 160_000), false);
  t.equal(slots.mayHold(4, 559_999), true);
  t.equal(slots.mayHold(4, 560_000), false);
  t.equal(slots.mayHold(2, Number.NaN), true, "an unparsable time: every slot that holds one");
  t.equal(slots.mayHold(7, 0), false, "no such slot");
  t.equal(slots.live(2, 699_999), true);
  t.equal(slots.live(2, 700_000), false, "an expired slot not swept yet reads as empty");
});

t.test("the map outlives a restart: nothing cleared again, what expired meanwhile cleared at the next rotation", async (t) => {
  const meta = metaDb(t);
  const { calls, clear } = clearLog();
  const before = new GenerationSlots(meta, retentionMs);
  before.rotate(0, clear);
  before.rotate(100_000, clear);
  await meta.committed;
  const after = new GenerationSlots(meta, retentionMs);
  t.equal(after.count, 5);
  t.equal(after.mayHold(0, 159_999), true, "generation 0 still in slot 0, its times known");
  t.equal(after.mayHold(0, 160_000), false);
  t.equal(after.mayHold(1, 259_999), true);
  t.equal(after.mayHold(2, 0), false);
  t.equal(after.live(1, 599_999), true);
  t.equal(after.live(1, 600_000), false, "the due time as written, not one worked out again");
  calls.length = 0;
  t.equal(after.rotate(100_001, clear), 1);
  t.strictSame(calls, [], "the current generation's slot is ready already");
  // Down until 650 s: generations 0 and 1 expired meanwhile.
  await meta.committed;
  const later = new GenerationSlots(meta, retentionMs);
  t.equal(later.rotate(650_000, clear), 1);
  t.strictSame(calls, [[0, true], [1, true]]);
  t.strictSame(await stored(meta, 2), [[-1, 0], [6, 1_100_000]]);
});

t.test("under a new generation length, a slot written before matches no generation and keeps its due time", async (t) => {
  const meta = metaDb(t);
  const { calls, clear } = clearLog();
  const before = new GenerationSlots(meta, retentionMs);
  before.rotate(0, clear);
  before.rotate(100_000, clear);
  await meta.committed;
  calls.length = 0;
  // A tenth of the window: 10 s generations, generation g due at (g + 5) × 10 s.
  const slots = new GenerationSlots(meta, 40_000);
  await meta.committed;
  t.equal(meta.get("generation-ms"), 10_000, "the new length written down");
  t.equal(slots.mayHold(0, 1e12), true, "its times unknown: it may hold any call");
  t.equal(slots.mayHold(1, Number.NaN), true);
  t.equal(slots.mayHold(2, 0), false, "an empty slot stays empty");
  t.equal(slots.live(0, 499_999), true, "due when it was due");
  t.equal(slots.live(0, 500_000), false);
  // 120 s: generation 12, slot 2 (empty). Slots 0 and 1 are not due: left alone.
  t.equal(slots.rotate(120_000, clear), 2);
  t.strictSame(calls, [[2, false]]);
  // 150 s: generation 15 takes slot 0, whose entries are due at 500 s only: kept, and the slot with them.
  t.equal(slots.rotate(150_000, clear), 0);
  t.strictSame(calls, [[2, false]], "entries not yet due are not dropped");
  t.equal(slots.live(0, 499_999), true, "the slot lives until its old entries are due");
  t.equal(slots.live(0, 500_000), false);
  t.equal(slots.mayHold(0, 219_999), true, "generation 15 (150–160 s) now, plus the skew");
  t.equal(slots.mayHold(0, 220_000), false);
  t.strictSame(await stored(meta, 3), [[15, 500_000], [-2, 600_000], [12, 170_000]], "slot 1's times written down as unknown");
  // Another restart under the same new length: slot 1's entries (calls of 100–200 s) still count as unknown times.
  const again = new GenerationSlots(meta, 40_000);
  t.equal(again.mayHold(1, 150_000), true, "after a second restart, a call of 150 s may still be in slot 1");
  t.equal(again.mayHold(0, 219_999), true, "and slot 0 holds generation 15");
  // 500 s: generation 50 takes slot 0, due now; slot 2's generation 12 (due 170 s) is dropped and emptied.
  t.equal(slots.rotate(500_000, clear), 0);
  t.strictSame(calls, [[2, false], [0, true], [2, true]]);
  t.strictSame(await stored(meta, 3), [[50, 550_000], [-2, 600_000], [-1, 0]]);
  t.equal(slots.rotate(600_000, clear), 0, "generation 60");
  t.strictSame(calls.slice(3), [[0, true], [1, true]], "slot 1's old entries go at their time");
});

t.test("a ledger that kept generation numbers only: three slots of half windows, due at (g + 3) half windows", async (t) => {
  const meta = metaDb(t);
  await meta.put("slots", 3);
  await meta.put("slot-0", 2);
  await meta.put("slot-1", 0);
  const slots = new GenerationSlots(meta, retentionMs);
  t.equal(slots.count, 5, "at least the live generations");
  t.equal(slots.live(0, 999_999), true, "generation 2 of 200 s halves: due at 1,000 s");
  t.equal(slots.live(0, 1_000_000), false);
  t.equal(slots.live(1, 599_999), true, "generation 0: due at 600 s");
  t.equal(slots.live(1, 600_000), false);
  t.equal(slots.live(2, 0), false, "an empty slot is due at once");
  t.equal(slots.mayHold(0, 1e12), true, "numbers of another length: any call");
  t.equal(slots.mayHold(2, 0), false);
  await meta.committed;
  t.equal(meta.get("slots"), 5);
  t.equal(meta.get("generation-ms"), gen);
  const { calls, clear } = clearLog();
  t.equal(slots.rotate(700_000, clear), 2, "generation 7 (slot 2)");
  t.strictSame(calls, [[1, true], [2, false]], "generation 0's slot due, generation 2's not yet");
  t.strictSame(await stored(meta, 3), [[-2, 1_000_000], [-1, 0], [7, 1_200_000]], "slot 0 is kept until it is due, written down as of unknown times with its due time");
  // A restart now reads the map as written: slot 0 still of unknown times, still due at 1,000 s.
  const again = new GenerationSlots(meta, retentionMs);
  t.equal(again.mayHold(0, 1e12), true, "any call, after the restart too");
  t.equal(again.live(0, 999_999), true, "due when it was due");
  t.equal(again.live(0, 1_000_000), false);

  // With windows of a millisecond, a half window is still 1 ms.
  const tiny = metaDb(t);
  await tiny.put("slot-0", 2);
  const small = new GenerationSlots(tiny, 1);
  t.equal(small.live(0, 4), true);
  t.equal(small.live(0, 5), false);
});

t.test("more slots than live generations (left by a coarser setting) are kept until due, then emptied", async (t) => {
  const meta = metaDb(t);
  await meta.put("slots", 7);
  await meta.put("generation-ms", gen);
  await meta.put("slot-5", 9);
  await meta.put("until-5", 300_000);
  await meta.put("slot-6", 1);
  await meta.put("until-6", 250_000);
  const slots = new GenerationSlots(meta, retentionMs);
  t.equal(slots.count, 7);
  t.equal(slots.mayHold(5, 1_059_999), true, "generation 9 (900 s–1,000 s), the length unchanged");
  t.equal(slots.mayHold(5, 1_060_000), false);
  t.equal(slots.mayHold(6, 0), true);
  const { calls, clear } = clearLog();
  t.equal(slots.rotate(200_000, clear), 2);
  t.strictSame(calls, [[2, false]], "slots 5 and 6 are not due");
  t.equal(slots.rotate(250_000, clear), 2);
  t.strictSame(calls, [[2, false], [6, true]], "slot 6 cleared at its time");
  t.equal(slots.rotate(300_000, clear), 3);
  t.strictSame(calls.slice(2), [[3, false], [5, true]]);
  t.equal(slots.mayHold(5, 0), false);
  t.strictSame(await stored(meta, 7), [
    [undefined, undefined],
    [undefined, undefined],
    [2, 700_000],
    [3, 800_000],
    [undefined, undefined],
    [-1, 0],
    [-1, 0],
  ]);
  await meta.committed;
  t.equal(meta.get("slots"), 7);
  t.equal(new GenerationSlots(meta, retentionMs).count, 7, "still seven after a restart");
});
