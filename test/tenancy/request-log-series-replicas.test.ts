// The console's series read across replicas (tenancy/request-log-series.ts)
// on a real Redis: two replicas, each with its own store, hold different
// calls; the series read on either adds both: counts and spend sum, and the
// percentiles come from the merged histogram (not averaged, not the larger of
// the two). A replica that registered and went silent makes the read 503,
// as a page read does.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { isTroupeError } from "../../core/errors.ts";
import { createLogger } from "../../core/log.ts";
import { bucketStart } from "../../tenancy/request-log-aggregates.ts";
import type { RequestLogEntry } from "../../tenancy/request-log-entry.ts";
import { RequestLogReplicas } from "../../tenancy/request-log-replicas.ts";
import { localSeries, type SeriesRead } from "../../tenancy/request-log-series.ts";
import { RequestLogStore } from "../../tenancy/request-log-store.ts";
import { RedisDataStore } from "../../tenancy/redis-data-store.ts";
import { startTestRedis } from "../support/redis.ts";
import { logEntry } from "../support/request-log-entry.ts";

t.setTimeout(60_000);
const redis = await startTestRedis();
t.teardown(() => redis.stop());
const prefix = `test:series:${Date.now()}:`;
const hour = 3_600_000;
// Mid-hour and mid-minute, so every call of a test is in the same hour and minute.
const nowMs = bucketStart(Date.UTC(2030, 0, 10, 12, 0, 0), "hour") + 30 * 60_000 + 30_000;
const clock = { now: () => nowMs };
const log = createLogger("silent");

let n = 0;
function call(latencyMs: number, status: number, costNanos: number, createdMs = nowMs - 1000): RequestLogEntry {
  n += 1;
  const owner = { organization_id: "org_s", project_id: "prj_s", environment_id: "env_s", api_key_id: "key_s" };
  return logEntry(`req_${n}`, createdMs, { ...owner, status, latency_ms: latencyMs, ttfb_ms: null, cost_nanos: costNanos });
}

async function replica(answerTimeoutMs = 2_000): Promise<{ local: RequestLogStore; data: RedisDataStore; replicas: RequestLogReplicas }> {
  const local = new RequestLogStore(mkdtempSync(join(tmpdir(), "reqlog-series-")), clock, { retentionMs: 30 * 86_400_000, maxEntries: 1_000_000 });
  const data = new RedisDataStore(redis.url, prefix);
  const replicas = new RequestLogReplicas({ store: data, local, clock, log, answerTimeoutMs });
  await replicas.start();
  return { local, data, replicas };
}

const a = await replica();
const b = await replica();
t.teardown(async () => {
  for (const r of [a, b]) {
    await r.replicas.stop();
    await r.data.close();
    await r.local.close();
  }
});

// A: 100 fast calls (≤ 5 ms), 1 of them a 502; B: 1 call of 40 ms and 4 of 4 s, 2 of them 502, and 2 calls earlier this month.
await a.local.append([...Array.from({ length: 99 }, () => call(3, 200, 1_000_000)), call(3, 502, 0)]);
await b.local.append([call(40, 200, 5_000_000), call(4000, 200, 5_000_000), call(4000, 200, 5_000_000), call(4000, 502, 0), call(4000, 502, 0)]);
const monthStart = Date.UTC(2030, 0, 1);
await b.local.append([call(100, 200, 250_000_000, monthStart + 2 * 86_400_000), call(100, 200, 250_000_000, monthStart + 5 * 86_400_000)]);

const hourRead = (scope: string): SeriesRead => ({ scope, resolution: "hour", fromMs: nowMs - 23 * hour, toMs: nowMs });

t.test("the hourly series on either replica adds both replicas' buckets", async (t) => {
  for (const [name, r] of [["a", a], ["b", b]] as const) {
    const [org, project] = await r.replicas.series([hourRead("org:org_s"), hourRead("project:prj_s")]);
    t.equal(org?.length, 24, `${name}: 24 hourly points`);
    const last = org?.at(-1);
    t.equal(last?.requests, 105, `${name}: 100 of a's and 5 of b's`);
    t.equal(last?.errors, 3, `${name}: one 502 of a's, two of b's`);
    t.equal(Math.round((last?.spend_usd ?? 0) * 1e9), 99_000_000 + 15_000_000, `${name}: spend sums`);
    t.equal(last?.tokens, 105 * 15);
    // Merged: 100 at ≤ 5 ms, 1 at ≤ 50, 4 at ≤ 5000. p50 and p95 (rank 100) are 5 ms, p99 (rank 104) 5 s;
    // b alone reads 5000 at p95, the average of the two replicas' p95s 2502.5.
    t.equal(last?.p50_ms, 5, `${name}: p50 of the merged histogram`);
    t.equal(last?.p95_ms, 5, `${name}: p95 of the merged histogram, not b's 5000 or an average`);
    t.equal(last?.p99_ms, 5000, `${name}: p99 of the merged histogram`);
    t.same(project, org, `${name}: the project's series is the same calls`);
  }
  const aAlone = localSeries(a.local).series([hourRead("org:org_s")]);
  t.equal(Array.isArray(aAlone) ? aAlone[0]?.at(-1)?.requests : undefined, 100, "a's own store holds only its 100");
});

t.test("a key's minute and month add both replicas' figures", async (t) => {
  const [minute, month] = await a.replicas.series([
    { scope: "key:key_s", resolution: "minute", fromMs: nowMs, toMs: nowMs },
    { scope: "key:key_s", resolution: "day", fromMs: monthStart, toMs: nowMs },
  ]);
  t.equal(minute?.length, 1);
  t.equal(minute?.[0]?.requests, 105, "this minute: both replicas' calls");
  t.equal(minute?.[0]?.tokens, 105 * 15);
  t.equal(month?.length, 10, "January 1st to 10th");
  const spent = (month ?? []).reduce((sum, p) => sum + p.spend_usd, 0);
  t.equal(Math.round(spent * 1e9), 99_000_000 + 15_000_000 + 500_000_000, "this month: both replicas' spend, the earlier days' too");
  t.equal(month?.[2]?.requests, 1, "January 3rd: b's call");
});

t.test("a replica that registered and went silent makes the series read 503", async (t) => {
  const silent = await replica();
  // Its connection is cut without leaving the registry: its registration lives on until its TTL.
  await silent.data.close();
  const asker = await replica(300);
  t.teardown(async () => {
    await asker.replicas.stop();
    await asker.data.close();
    await asker.local.close();
    await silent.local.close();
  });
  const error = await asker.replicas.series([hourRead("org:org_s")]).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(isTroupeError(error) && error.code === "service_unavailable", `service_unavailable, got ${String(error)}`);
  const page = await asker.replicas.page("prj_s", {}, 10).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(isTroupeError(page) && page.code === "service_unavailable", "the page read 503s alike");
});
