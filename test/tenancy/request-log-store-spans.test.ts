// The request log's store keeps its generations' spans in memory between
// writes (tenancy/request-log-store.ts): the copy must follow every write,
// appends that overlap included, and agree with what a reopened store reads
// from disk.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import type { RequestLogEntry } from "../../tenancy/request-log-entry.ts";
import { RequestLogStore } from "../../tenancy/request-log-store.ts";
import { logEntry } from "../support/request-log-entry.ts";

const hour = 3_600_000;
const now = Date.UTC(2030, 0, 10, 12, 0, 0);
const clock = { now: () => now };
const options = { retentionMs: 24 * hour, maxEntries: 1000 };

function entry(n: number, createdMs: number): RequestLogEntry {
  return logEntry(`req_${n}`, createdMs, { model: "gpt-4.1", latency_ms: 40 });
}

t.test("appends that overlap each count their entries, in memory and on disk", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "request-log-spans-"));
  const store = new RequestLogStore(dir, clock, options);
  await store.append([entry(1, now - 1000)]);
  // Not awaited in turn: the second's transaction sees the first's spans, which the copy does not hold yet.
  await Promise.all([store.append([entry(2, now - 900)]), store.append([entry(3, now - 800), entry(4, now - 7 * hour)])]);
  t.same(store.size(), { entries: 4, generations: 2 }, "the store's own count");
  t.equal(store.page("prj_a", {}, 10).entries.length, 4, "a page reads all four");
  await store.close();
  const reopened = new RequestLogStore(dir, clock, options);
  t.same(reopened.size(), { entries: 4, generations: 2 }, "the count on disk");
  await reopened.close();
});

t.test("an erasure's counts are read after it, not the copy from before", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "request-log-spans-"));
  const store = new RequestLogStore(dir, clock, options);
  await store.append([entry(1, now - 1000), entry(2, now - 900)]);
  t.equal(store.size().entries, 2);
  t.equal(await store.eraseOrganization("org_a", ["prj_a"]), 2);
  t.equal(store.size().entries, 0, "none held after the erasure");
  await store.append([entry(3, now - 800)]);
  t.equal(store.size().entries, 1, "the next append counts from the erased state");
  // An erasure begun while an append is in flight: the append must not put back the spans it committed before it.
  await Promise.all([store.append([entry(4, now - 700)]), store.eraseOrganization("org_a", ["prj_a"])]);
  t.equal(store.size().entries, 0, "the erasure that began during an append is counted");
  await store.close();
});
