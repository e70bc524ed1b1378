// The request log's store with an injected clock: entries past the
// retention window go a generation at a time, the held count never passes
// maxEntries, a page reads across generations in order, and the aggregates
// equal the entries they were added from (a request counted once, even when
// its entry is appended again).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { latencyBoundsMs, percentileMs } from "../../tenancy/request-log-aggregates.ts";
import type { RequestLogEntry } from "../../tenancy/request-log-entry.ts";
import { RequestLogStore } from "../../tenancy/request-log-store.ts";
import { scanLmdb } from "../support/org-footprint.ts";
import { logEntry } from "../support/request-log-entry.ts";

const hour = 3_600_000;
const start = Date.UTC(2030, 0, 10, 12, 0, 0);

function entry(n: number, createdMs: number, over: Partial<RequestLogEntry> = {}): RequestLogEntry {
  return logEntry(`req_${n}`, createdMs, {
    api_key_id: n % 2 === 0 ? "key_even" : "key_odd",
    model: n % 3 === 0 ? "gpt-4.1" : "gpt-4.1-mini",
    status: n % 5 === 0 ? 502 : 200,
    latency_ms: (n % 7) * 40 + 3,
    cost_nanos: 1000 * n,
    ...over,
  });
}

const dirs = new WeakMap<RequestLogStore, string>();
function open(options: { retentionMs: number; maxEntries: number }, clock: { now: () => number }) {
  const dir = mkdtempSync(join(tmpdir(), "reqlog-"));
  const store = new RequestLogStore(dir, clock, options);
  dirs.set(store, dir);
  t.teardown(() => store.close());
  return store;
}

t.test("retention: old generations are dropped whole; the held count stays flat", async (t) => {
  let now = start;
  const clock = { now: () => now };
  // 4 hours, so a generation is an hour.
  const store = open({ retentionMs: 4 * hour, maxEntries: 1_000_000 }, clock);
  const held: number[] = [];
  let n = 0;
  for (let h = 0; h < 12; h++) {
    const batch: RequestLogEntry[] = [];
    for (let i = 0; i < 50; i++) batch.push(entry(n++, now + i * 1000));
    await store.append(batch);
    held.push(store.size().entries);
    now += hour;
  }
  // Generations live: the current and the 4 before it; each holds one hour's 50 entries.
  t.same(held.slice(5), [250, 250, 250, 250, 250, 250, 250], "flat after the window fills");
  t.ok(store.size().generations <= 5);
  t.equal(store.get("prj_a", "req_0"), undefined, "the first hour's entries are gone");
  t.ok(store.get("prj_a", `req_${n - 1}`), "the last is there");
  const page = store.page("prj_a", {}, 1000);
  t.ok(page.entries.every((e) => e.created_ms >= now - 6 * hour), "a page holds no dropped entry");
});

t.test("maxEntries bounds the store even inside the window", async (t) => {
  let now = start;
  const store = open({ retentionMs: 4 * hour, maxEntries: 120 }, { now: () => now });
  let n = 0;
  let most = 0;
  for (let h = 0; h < 8; h++) {
    for (let b = 0; b < 3; b++) {
      await store.append(Array.from({ length: 30 }, (_, i) => entry(n++, now + i)));
      most = Math.max(most, store.size().entries);
    }
    now += hour;
  }
  t.ok(most <= 120 + 30, `held at most maxEntries and one batch (most: ${most})`);
  t.ok(store.size().entries > 0);
});

t.test("filters and pages across generations", async (t) => {
  let now = start;
  const store = open({ retentionMs: 4 * hour, maxEntries: 1_000_000 }, { now: () => now });
  const all: RequestLogEntry[] = [];
  for (let i = 0; i < 300; i++) all.push(entry(i, start + i * 30_000));
  now = start + 300 * 30_000;
  await store.append(all);
  const expect = (f: (e: RequestLogEntry) => boolean) => all.filter(f).sort((a, b) => b.created_ms - a.created_ms).map((e) => e.request_id);
  const read = (filter: Parameters<RequestLogStore["page"]>[1], limit = 7) => {
    const ids: string[] = [];
    let after: string | null = null;
    do {
      const page = store.page("prj_a", filter, limit, after);
      ids.push(...page.entries.map((e) => e.request_id));
      after = page.nextCursor;
    } while (after !== null);
    return ids;
  };
  t.same(read({}), expect(() => true), "every entry, newest first, over two generations");
  t.same(read({ api_key_id: "key_even" }), expect((e) => e.api_key_id === "key_even"));
  t.same(read({ model: "gpt-4.1", status: 502 }), expect((e) => e.model === "gpt-4.1" && e.status === 502), "two filters");
  t.same(read({ error_code: "provider_error", api_key_id: "key_odd" }), expect((e) => e.error_code === "provider_error" && e.api_key_id === "key_odd"));
  const fromMs = start + 50 * 30_000;
  const toMs = start + 120 * 30_000;
  t.same(read({ fromMs, toMs }), expect((e) => e.created_ms >= fromMs && e.created_ms <= toMs), "a time range, both ends inclusive");
  t.same(read({ keyIds: new Set(["key_odd"]) }), expect((e) => e.api_key_id === "key_odd"), "a member's keys");
  t.same(read({}, 1000), expect(() => true), "one page");
  t.same(store.page("prj_b", {}, 10).entries, [], "another project's log is its own");
});

t.test("aggregates equal the entries they count", async (t) => {
  let now = start;
  const store = open({ retentionMs: 7 * 24 * hour, maxEntries: 1_000_000 }, { now: () => now });
  const made: RequestLogEntry[] = [];
  for (let i = 0; i < 200; i++) made.push(entry(i, start + i * 20_000));
  now = start + 200 * 20_000;
  await store.append(made.slice(0, 120));
  await store.append(made.slice(120));
  const minutes = store.series("project:prj_a", "minute", start, now);
  t.equal(minutes.reduce((s, p) => s + p.requests, 0), 200, "requests");
  t.equal(minutes.reduce((s, p) => s + p.errors, 0), made.filter((e) => e.status >= 400).length, "errors");
  t.equal(Math.round(minutes.reduce((s, p) => s + p.spend_usd, 0) * 1e9), made.reduce((s, e) => s + e.cost_nanos, 0), "spend");
  for (const p of minutes) {
    const inMinute = made.filter((e) => e.created_ms >= p.start_ms && e.created_ms < p.start_ms + 60_000);
    t.equal(p.requests, inMinute.length, `minute ${new Date(p.start_ms).toISOString()}`);
  }
  const [hourly] = store.series("org:org_a", "hour", start, start);
  t.equal(hourly?.requests, made.filter((e) => e.created_ms < start + hour).length, "the organization's hour");
  const sorted = made.map((e) => e.latency_ms).sort((a, b) => a - b);
  const trueP99 = sorted[Math.ceil(0.99 * sorted.length) - 1] ?? 0;
  const bound = latencyBoundsMs.find((b) => b >= trueP99);
  const day = store.series("project:prj_a", "day", start, start);
  t.equal(day[0]?.p99_ms, bound, "p99: the histogram bound at or above the true p99");
  t.equal(percentileMs([0, 0, 0], 0.5), null, "no requests, no percentile");
});

t.test("the charts count a request once: an entry appended again is not counted again; one the log has no room for still is", async (t) => {
  const now = start + 10 * 60_000;
  const store = open({ retentionMs: 7 * 24 * hour, maxEntries: 3 }, { now: () => now });
  const made = Array.from({ length: 3 }, (_, i) => entry(i + 1, start + i * 1000));
  await store.append(made);
  await store.append(made.slice(0, 2)); // a retried append of two of them
  const requests = () => store.series("project:prj_a", "hour", start, now).reduce((s, p) => s + p.requests, 0);
  t.equal(requests(), 3, "three requests, though five entries were appended");
  t.equal(store.size().entries, 3);
  await store.append([entry(4, start + 5000)]); // the log is full: the entry is not kept
  t.equal(store.size().entries, 3, "the full log keeps its three");
  t.equal(requests(), 4, "but the request it could not keep still happened");
});

t.test("erasing an organization leaves nothing of it, and its neighbours whole", async (t) => {
  let now = start;
  const store = open({ retentionMs: 4 * hour, maxEntries: 1_000_000 }, { now: () => now });
  const batch: RequestLogEntry[] = [];
  for (let i = 0; i < 60; i++) batch.push(entry(i, start + i * 120_000, { project_id: "prj_a" }));
  for (let i = 60; i < 90; i++) batch.push(entry(i, start + (i - 60) * 120_000, { project_id: "prj_ab", organization_id: "org_b", api_key_id: "key_b" }));
  now = start + 2 * hour;
  await store.append(batch);
  t.equal(await store.eraseOrganization("org_a", ["prj_a"]), 60, "the organization's 60 entries");
  t.same(store.page("prj_a", {}, 100).entries, [], "no entry left");
  t.equal(store.get("prj_a", "req_1"), undefined);
  for (const scope of ["org:org_a", "project:prj_a", "key:key_even", "key:key_odd"]) {
    t.equal(store.series(scope, "hour", start, now).reduce((s, p) => s + p.requests, 0), 0, `${scope}: no bucket left`);
  }
  t.equal(store.page("prj_ab", {}, 100).entries.length, 30, "a project whose id starts with the erased one's is untouched");
  t.equal(store.series("org:org_b", "hour", start, now).reduce((s, p) => s + p.requests, 0), 30, "another organization's buckets");
  t.equal(store.size().entries, 30, "the count follows");
  // Read straight from the file, every database record by record: no entry, index row or bucket names them.
  t.same(scanLmdb(dirs.get(store) ?? "", ["org_a", "key_even", "key_odd"]), [], "nothing of the organization on disk");
  t.ok(scanLmdb(dirs.get(store) ?? "", ["key_b"]).length > 0, "the scan finds what is there");
});

t.test("a change of retention between runs expires the old entries exactly at the new retention", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "reqlog-retention-"));
  let now = start;
  const clock = { now: () => now };
  // First run: 8 hours (2-hour generations); entries every 10 minutes over 3 hours.
  const first = new RequestLogStore(dir, clock, { retentionMs: 8 * hour, maxEntries: 1_000_000 });
  const made = Array.from({ length: 18 }, (_, i) => entry(i, start + i * 600_000));
  now = start + 3 * hour;
  await first.append(made);
  await first.close();
  const visible = (s: RequestLogStore) => s.page("prj_a", {}, 1000).entries.map((e) => e.request_id).sort();
  const within = (ms: number) => made.filter((e) => e.created_ms >= now - ms).map((e) => e.request_id).sort();

  // Second run, shorter: 2 hours (30-minute generations). Only the last 2 hours' entries show, none older.
  const shorter = new RequestLogStore(dir, clock, { retentionMs: 2 * hour, maxEntries: 1_000_000 });
  t.same(visible(shorter), within(2 * hour), "the last 2 hours, at the new retention");
  t.ok(shorter.get("prj_a", "req_17"), "the newest is there");
  t.equal(shorter.get("prj_a", "req_0"), undefined, "3 hours old: expired at 2");
  now += 30 * 60_000;
  await shorter.append([entry(100, now)]);
  t.same(visible(shorter).filter((id) => id !== "req_100"), within(2 * hour), "half an hour later, still exactly 2 hours back");
  await shorter.close();

  // Third run, longer: 12 hours. What the 2-hour run still held stays readable (not lost in a far generation) and expires at 12 hours.
  const longer = new RequestLogStore(dir, clock, { retentionMs: 12 * hour, maxEntries: 1_000_000 });
  t.teardown(() => longer.close());
  const held = visible(longer);
  t.ok(held.includes("req_17") && held.includes("req_100"), `entries of both earlier runs are read (${held.length})`);
  const newest = made[17]?.created_ms ?? 0;
  now = newest + 12 * hour - 1;
  t.ok(longer.get("prj_a", "req_17"), "1 ms before 12 hours: there");
  now = newest + 12 * hour + 1;
  t.equal(longer.get("prj_a", "req_17"), undefined, "1 ms after 12 hours: gone");
  now += 13 * hour;
  await longer.append([entry(200, now)]);
  t.same(longer.size(), { entries: 1, generations: 1 }, "every earlier generation dropped from the file");
});
