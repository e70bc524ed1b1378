// `node bench/journal-append.ts`: what the usage journal adds to a call, in
// process: UsageJournal.append (one JSON line, one write(2)) per record,
// against building the same JSON without writing it, alternating rounds.
// Prints ns per record (median of the rounds) for each and their difference.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../core/log.ts";
import type { UsageRecord } from "../providers/usage.ts";
import { UsageJournal } from "../tenancy/usage-journal.ts";
import { chatUsageRecord, fixedOwner } from "./lib/usage-records.ts";

const records = 50_000;
const rounds = 5;
const record = (i: number): UsageRecord => chatUsageRecord(fixedOwner, `req_${i}`, "2026-11-25T14:00:00.000Z");
const batch = Array.from({ length: records }, (_, i) => record(i));
const dir = mkdtempSync(join(tmpdir(), "journal-bench-"));
const journal = new UsageJournal(dir, createLogger("silent"));
let sink = 0;
const timeIt = (f: (r: UsageRecord) => void): number => {
  const started = process.hrtime.bigint();
  for (const r of batch) f(r);
  return Number(process.hrtime.bigint() - started) / records;
};
const results: { stringify: number[]; append: number[] } = { stringify: [], append: [] };
for (let round = 0; round < rounds; round++) {
  results.stringify.push(timeIt((r) => void (sink += JSON.stringify(r).length)));
  results.append.push(timeIt((r) => journal.append(r)));
  await journal.applied(journal.cut());
}
journal.close(true);
rmSync(dir, { recursive: true, force: true });
const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)] ?? NaN;
const s = median(results.stringify);
const a = median(results.append);
console.log(`JSON.stringify of a record: ${s.toFixed(0)} ns; UsageJournal.append (stringify + write(2)): ${a.toFixed(0)} ns; the write itself: ${(a - s).toFixed(0)} ns per record (${records} records × ${rounds} rounds, medians; ${sink > 0 ? "ok" : ""})`);
