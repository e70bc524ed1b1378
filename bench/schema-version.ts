// `node bench/schema-version.ts`: what the schema-version mark
// (core/schema-version.ts) adds to the hot path, in process and without I/O,
// so the figure is not lost in a write(2)'s noise: a usage record serialized
// as the journal and the Redis ledger write it (versionedJson around
// JSON.stringify) against JSON.stringify alone, and a stored document read
// back (readVersioned after JSON.parse) against JSON.parse alone. Variants
// alternate within each round; prints ns per record (median of the rounds).
import { parseVersioned, versionedJson } from "../core/schema-version.ts";
import type { UsageRecord } from "../providers/usage.ts";
import { chatUsageRecord, fixedOwner } from "./lib/usage-records.ts";

const perRound = 100_000;
const rounds = 15;
const record = (i: number): UsageRecord => chatUsageRecord(fixedOwner, `req_${i}`, "2026-11-25T14:00:00.000Z");
const batch = Array.from({ length: perRound }, (_, i) => record(i));
const plainTexts = batch.map((r) => JSON.stringify(r));
const markedTexts = batch.map((r) => versionedJson(JSON.stringify(r)));
let sink = 0;

function time(f: (i: number) => number): number {
  const started = process.hrtime.bigint();
  for (let i = 0; i < perRound; i++) sink += f(i);
  return Number(process.hrtime.bigint() - started) / perRound;
}

const variants: Record<string, (i: number) => number> = {
  "write: JSON.stringify": (i) => JSON.stringify(batch[i]).length,
  "write: versionedJson(JSON.stringify)": (i) => versionedJson(JSON.stringify(batch[i])).length,
  "read: JSON.parse": (i) => ((JSON.parse(plainTexts[i]!) as UsageRecord).cost_nanos),
  "read: parseVersioned": (i) => ((parseVersioned("usage-record", markedTexts[i]!) as UsageRecord).cost_nanos),
};
const samples: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
for (let round = 0; round < rounds + 2; round++) {
  for (const [name, f] of Object.entries(variants)) {
    const ns = time(f);
    if (round >= 2) samples[name]!.push(ns); // the first two rounds warm the JIT
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const m = Object.fromEntries(Object.entries(samples).map(([k, xs]) => [k, median(xs)]));
for (const [name, ns] of Object.entries(m)) console.log(`${name.padEnd(40)} ${ns.toFixed(0)} ns`);
const write = m["write: versionedJson(JSON.stringify)"]! - m["write: JSON.stringify"]!;
const read = m["read: parseVersioned"]! - m["read: JSON.parse"]!;
console.log(`the mark adds ${write.toFixed(0)} ns per write and ${read.toFixed(0)} ns per read (${perRound} records × ${rounds} rounds, medians; ${sink > 0 ? "ok" : "?"})`);
