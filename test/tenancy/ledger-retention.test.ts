// The ledger does not grow with the number of calls: each call's own entry
// is compact and kept for the retention window only (embedded: the
// generation's lmdb database is cleared; Redis: its hash expires), while the
// per-day counters the usage reports read keep every call.
import { mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { open } from "lmdb";
import t, { type Test } from "tap";
import { prefixedId } from "../../core/ids.ts";
import { EmbeddedLedgerStore } from "../../tenancy/embedded-ledger-store.ts";
import { generationsPerWindow, liveGenerations } from "../../tenancy/ledger-entry.ts";
import type { LedgerStore } from "../../tenancy/ledger.ts";
import { RedisLedgerStore } from "../../tenancy/redis-ledger-store.ts";
import { startTestRedis } from "../support/redis.ts";

// Key prefixes of this run: on a shared Redis (CI's, a developer's) an earlier run's hashes live on until Redis expires them.
const run = `${prefixedId("run")}:`;
import { usage } from "./ledger-store-suite.ts";

const retentionMs = 60_000;
const march = "2026-03";

async function calls(ledger: LedgerStore, projectId: string): Promise<number> {
  return (await ledger.usageRows(projectId, march, march)).reduce((sum, row) => sum + row.calls, 0);
}

/** Bytes of lmdb pages the per-call databases use, and their entries (the store closed). */
function entryPages(dir: string): { bytes: number; entries: number } {
  const root = open({ path: join(dir, "billing", "ledger.lmdb"), readOnly: true });
  let bytes = 0;
  let entries = 0;
  for (let i = 0; i < liveGenerations; i++) {
    const stats = root.openDB({ name: `calls-${i}` }).getStats() as { entryCount: number; treeBranchPageCount: number; treeLeafPageCount: number; overflowPages: number; pageSize: number };
    entries += stats.entryCount;
    bytes += (stats.treeBranchPageCount + stats.treeLeafPageCount + stats.overflowPages) * stats.pageSize;
  }
  void root.close();
  return { bytes, entries };
}

/**
 * 40 steps of a tenth of a window, 50 calls each: the entries held after
 * each step. Once the first window has passed they are the calls of the last
 * window at least and of 1 + 1/G windows at most: the saw tooth is 1/G.
 */
async function heldPerStep(ledger: LedgerStore, tick: () => void): Promise<number[]> {
  const held: number[] = [];
  for (let step = 0; step < 40; step++) {
    tick();
    await ledger.append(Array.from({ length: 50 }, () => usage({ project_id: "prj_ret" })));
    held.push((await ledger.records("prj_ret", march)).length);
  }
  return held;
}

function assertFlat(t: Test, held: number[]): void {
  const steady = held.slice(15);
  const [low, high] = [Math.min(...steady), Math.max(...steady)];
  // The window is 10 steps; the generation being filled adds up to 10/G steps more (a step's appends
  // land in one generation): 13 steps with G = 4, written out so that a coarser G fails here.
  const bound = 50 * 13;
  t.ok(low >= 500, `at least the last window's calls held: ${low} (>= 500)`);
  t.ok(high <= bound, `at most 1 + 1/G windows held (G = ${generationsPerWindow}): ${high} (<= ${bound}); per step: ${steady.join(" ")}`);
  t.ok(high <= 1.3 * low, `the saw tooth: ${low}–${high} entries (within 30 %, G = 2 held 500–750)`);
}

t.test("embedded: entries are kept for the retention window, the counters for good", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-ledger-"));
  let now = Date.parse("2026-03-15T10:00:00.000Z");
  let ledger = new EmbeddedLedgerStore(dir, { retentionMs, now: () => now });
  const first = usage({ project_id: "prj_ret" });
  await ledger.append([first]);
  now += 0.9 * retentionMs;
  await ledger.append([first]);
  t.equal(await calls(ledger, "prj_ret"), 1, "appended again within the window: billed once");
  t.same((await ledger.records("prj_ret", march)).map((r) => r.usage_key), [first.usage_key]);

  now += 0.7 * retentionMs;
  const second = usage({ project_id: "prj_ret" });
  await ledger.append([second]);
  t.same((await ledger.records("prj_ret", march)).map((r) => r.usage_key), [second.usage_key], "the entry older than 1 + 1/G windows is gone");
  t.equal(await calls(ledger, "prj_ret"), 2, "the report still counts it");
  t.equal(await ledger.spent("prj_ret", march), 2000);

  // Many calls over many windows: the entries on disk are those of the last 1 + 1/G windows at most.
  const held = await heldPerStep(ledger, () => (now += retentionMs / 10));
  t.equal(await calls(ledger, "prj_ret"), 2002, "every call in the counters");
  await ledger.close();
  const kept = entryPages(dir).entries;
  t.equal(kept, held.at(-1), "the entries on disk are those the ledger reads");
  assertFlat(t, held);

  // Durable: a restart long after deletes what expired meanwhile, with no call appended.
  now += 2 * retentionMs;
  ledger = new EmbeddedLedgerStore(dir, { retentionMs, now: () => now });
  t.same(await ledger.records("prj_ret", march), []);
  t.equal(await calls(ledger, "prj_ret"), 2002);
  await ledger.close();
  t.equal(entryPages(dir).entries, 0, "the expired generations are cleared on disk");
});

t.test("embedded: a replay is billed once whichever generation holds the original, and at its call's time the check reads only the slots that may", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-ledger-"));
  let now = Date.parse("2026-03-15T10:00:00.000Z");
  const ledger = new EmbeddedLedgerStore(dir, { retentionMs, now: () => now });
  // Made and appended now; replayed (a journal after a crash, a retried flush) in each later generation of the window.
  const call = usage({ project_id: "prj_replay", created_at: new Date(now).toISOString() });
  await ledger.append([call]);
  for (let step = 1; step <= generationsPerWindow; step++) {
    now += (0.9 * retentionMs) / generationsPerWindow;
    await ledger.append([call, usage({ project_id: "prj_replay", created_at: new Date(now).toISOString() })]);
  }
  t.equal(await calls(ledger, "prj_replay"), 1 + generationsPerWindow, "the replayed call once, each new call once");
  await ledger.close();
});

t.test("embedded: a new retention setting (or generation length) keeps every entry until it is due", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-ledger-"));
  let now = Date.parse("2026-03-15T10:00:00.000Z");
  let ledger = new EmbeddedLedgerStore(dir, { retentionMs, now: () => now });
  const first = usage({ project_id: "prj_len" });
  await ledger.append([first]);
  await ledger.close();
  // A third of the window: generation numbers now count 5 s, not 15 s, and mean other times. 25 s
  // later the current generation's slot is the one holding the first entry, not yet due.
  now += 25_001;
  ledger = new EmbeddedLedgerStore(dir, { retentionMs: retentionMs / 3, now: () => now });
  await ledger.append([first]);
  t.equal(await calls(ledger, "prj_len"), 1, "appended again after the change, within the first window: billed once");
  t.same((await ledger.records("prj_len", march)).map((r) => r.usage_key), [first.usage_key]);
  now += retentionMs;
  await ledger.append([usage({ project_id: "prj_len" })]);
  t.equal((await ledger.records("prj_len", march)).length, 1, "past its due time, the old entry is deleted");
  await ledger.close();
});

t.test("embedded: a call's entry takes at most 200 bytes on disk", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-ledger-"));
  const ledger = new EmbeddedLedgerStore(dir);
  // Real id shapes: a project, two environments, a few keys and models, a ULID request id per call.
  const project = prefixedId("prj");
  const payers = Array.from({ length: 6 }, (_, i) => ({ organization_id: prefixedId("org"), environment_id: prefixedId("env"), api_key_id: prefixedId("key"), model: i % 2 ? "gpt-4.1-mini" : "claude-sonnet-4" }));
  const organization_id = payers[0]?.organization_id ?? "";
  const total = 20_000;
  const appends: Array<Promise<unknown>> = [];
  for (let i = 0; i < total; i += 16) {
    const batch = Array.from({ length: 16 }, (_, j) => {
      const payer = payers[(i + j) % payers.length];
      const request_id = prefixedId("req");
      return usage({ ...payer, organization_id, project_id: project, request_id, usage_key: request_id, input_tokens: 1200 + j, output_tokens: 300 + j, cost_nanos: 123_456 + j, created_at: new Date().toISOString() });
    });
    // As the usage recorder's flushes do: several appends per commit.
    appends.push(ledger.append(batch));
    if (appends.length === 64) await Promise.all(appends.splice(0));
  }
  await Promise.all(appends);
  await ledger.close();
  const { bytes, entries } = entryPages(dir);
  t.equal(entries, total);
  t.ok(bytes / entries <= 200, `${(bytes / entries).toFixed(0)} bytes of pages per entry`);
  const file = statSync(join(dir, "billing", "ledger.lmdb")).blocks * 512;
  t.ok(file / total <= 200 + 100, `the whole ledger file: ${(file / total).toFixed(0)} bytes per call`);
});

t.test("redis: a generation's hash expires; the counters stay", async (t) => {
  const server = await startTestRedis();
  t.teardown(() => server.stop());
  const redis = { url: server.url, client: new Redis(server.url) };
  t.teardown(() => redis.client.quit());
  const shortMs = 1_000;
  // Redis expires the hash by its own clock, so the ledger reads that clock
  // (TIME, then the elapsed time here), not this process's calendar.
  const [seconds, micros] = (await redis.client.time()).map(Number);
  const redisNowMs = (seconds ?? 0) * 1000 + Math.floor((micros ?? 0) / 1000);
  const startedMs = performance.now();
  const redisClock = () => redisNowMs + Math.round(performance.now() - startedMs);
  const ledger = new RedisLedgerStore(redis.url, `${run}ret:`, shortMs, redisClock);
  t.teardown(() => ledger.close());
  const now = new Date(redisClock()).toISOString();
  const first = usage({ project_id: "prj_ret", created_at: now });
  await ledger.append([first]);
  await ledger.append([first]);
  t.equal((await ledger.records("prj_ret", now.slice(0, 7))).length, 1, "billed once within the window");
  const memory = await redis.client.call("MEMORY", "USAGE", (await redis.client.keys(`${run}ret:calls:*`))[0] ?? "");
  t.ok(Number(memory) < 400, `one entry's hash: ${String(memory)} bytes`);
  await new Promise((resolve) => setTimeout(resolve, 1.6 * shortMs));
  t.same(await redis.client.keys(`${run}ret:calls:*`), [], "Redis expired the generation");
  t.same(await ledger.records("prj_ret", now.slice(0, 7)), []);
  const rows = await ledger.usageRows("prj_ret", now.slice(0, 7), now.slice(0, 7));
  t.equal(rows.reduce((sum, row) => sum + row.calls, 0), 1, "the report still counts the call");
  // Compact: 2,000 calls of one key and model (the default window: no expiry while measured).
  const lasting = new RedisLedgerStore(redis.url, `${run}compact:`);
  t.teardown(() => lasting.close());
  const batch = Array.from({ length: 2_000 }, () => {
    const request_id = prefixedId("req");
    return usage({ project_id: "prj_compact", request_id, usage_key: request_id, created_at: new Date().toISOString() });
  });
  await lasting.append(batch);
  const [hash] = await redis.client.keys(`${run}compact:calls:*`);
  const bytes = Number(await redis.client.call("MEMORY", "USAGE", hash ?? "", "SAMPLES", "0"));
  t.ok(bytes / 2_000 <= 200, `${(bytes / 2_000).toFixed(0)} bytes of Redis memory per entry`);
});

t.test("redis: the generations read and written hold the last window's calls and 1/G more", async (t) => {
  const server = await startTestRedis();
  t.teardown(() => server.stop());
  // A clock from now on (Redis expires each hash at its generation's end by its own clock, later than this test runs).
  let now = Date.now();
  const ledger = new RedisLedgerStore(server.url, `${run}flat:`, retentionMs, () => now);
  t.teardown(() => ledger.close());
  const held = await heldPerStep(ledger, () => (now += retentionMs / 10));
  assertFlat(t, held);
});
