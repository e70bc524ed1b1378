// A key's own budget in the ledger stores (embedded lmdb, threaded, one
// Redis, and a Redis Cluster, where the key's counters share its project's slot): its spend counted by the append that bills its records (equal to
// the sum of the key's aggregate rows), its reservations refused at its own
// limit apart from the project's, its alerts claimed once per threshold and
// marked with the key, pending until acknowledged.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import { EmbeddedLedgerStore } from "../../tenancy/embedded-ledger-store.ts";
import type { LedgerStore, StoredBudget } from "../../tenancy/ledger.ts";
import { RedisLedgerStore } from "../../tenancy/redis-ledger-store.ts";
import { ThreadedLedgerStore } from "../../tenancy/threaded-ledger-store.ts";
import { prefixedStores } from "../support/prefixed-stores.ts";
import { startTestRedis } from "../support/redis.ts";
import { startTestRedisCluster } from "../support/redis-cluster.ts";
import { usageRecord } from "../support/usage-record.ts";

t.setTimeout(120_000);

const budget = (limitUsd: number, hard: boolean, thresholds = [0.5, 1]): StoredBudget => ({
  monthly_limit_usd: limitUsd,
  alert_thresholds: thresholds,
  hard_limit: hard,
  updated_at: "2026-03-01T00:00:00.000Z",
});

function keyBudgetLedgerSuite(t: Test, name: string, create: () => Promise<LedgerStore>): void {
  t.test(`${name}: a key's spend, reservations and alerts are its own`, async (t) => {
    const ledger = await create();
    t.teardown(() => ledger.close());
    const project = `prj_${name}`;
    // 10 calls of 1,000 nano-dollars: 10 µUSD.
    await ledger.putBudget(project, budget(0.00001, true), "key_a");
    t.match(await ledger.getBudget(project, "key_a"), { monthly_limit_usd: 0.00001, hard_limit: true });
    t.equal(await ledger.getBudget(project), undefined, "the project has no budget of its own");
    const reservation = { project_id: project, api_key_id: "key_a", period: "2026-03", id: "rsv_1" };
    t.same(await ledger.reserve(reservation, 4000, Date.now() + 60_000, Date.now()), { admitted: true });

    const alerts = [];
    for (let i = 0; i < 6; i++) alerts.push(...(await ledger.append([usageRecord({ project_id: project, api_key_id: "key_a" })])));
    alerts.push(...(await ledger.append([usageRecord({ project_id: project, api_key_id: "key_b" })])));
    t.equal(await ledger.spent(project, "2026-03", "key_a"), 6000, "the key's spend");
    t.equal(await ledger.spent(project, "2026-03", "key_b"), 1000, "another key's, apart");
    t.equal(await ledger.spent(project, "2026-03"), 7000, "the project's: both keys");
    const rows = await ledger.usageRows(project, "2026-03", "2026-03");
    t.equal(rows.filter((r) => r.api_key_id === "key_a").reduce((sum, r) => sum + r.cost_nanos, 0), 6000, "= the sum of the key's aggregate rows");
    t.same(
      alerts.map((a) => [a.api_key_id, a.threshold, a.spent_nanos]),
      [["key_a", 0.5, 5000]],
      "50 % claimed once, by the append that reached it, marked with the key",
    );
    t.equal(alerts[0]?.project_id, project);

    // spent 6,000 + held 4,000 = the limit: refused; the project (no hard limit) still admits.
    const refused = await ledger.reserve({ ...reservation, id: "rsv_2" }, 1000, Date.now() + 60_000, Date.now());
    t.same(refused, { admitted: false, spent_nanos: 6000, reserved_nanos: 4000, limit_nanos: 10_000 });
    t.same(await ledger.reserve({ project_id: project, period: "2026-03", id: "rsv_3" }, 1000, Date.now() + 60_000, Date.now()), { admitted: true });
    t.same((await ledger.reserve({ project_id: project, api_key_id: "key_b", period: "2026-03", id: "rsv_4" }, 1000, Date.now() + 60_000, Date.now())).admitted, true, "a key without a budget is never refused");
    // Settling the first reservation with a record releases it: 7,000 spent, nothing held.
    const settled = usageRecord({ project_id: project, api_key_id: "key_a" });
    await ledger.append([settled], reservation);
    t.same(await ledger.reserve({ ...reservation, id: "rsv_5" }, 1000, Date.now() + 60_000, Date.now()), { admitted: true }, "the settled hold no longer counts");
    await ledger.release({ ...reservation, id: "rsv_5" });
    const parts = await ledger.reserveParts({ project_id: project, api_key_id: "key_a", period: "2026-03" }, [{ id: "lse_1", amount_nanos: 4000 }], Date.now() + 60_000, Date.now(), false);
    t.equal(parts.admitted, false, "a block past the key's limit is refused (7,000 + 4,000 > 10,000)");

    for (let i = 0; i < 4; i++) alerts.push(...(await ledger.append([usageRecord({ project_id: project, api_key_id: "key_a" })])));
    t.same(alerts.map((a) => a.threshold), [0.5, 1], "100 % once too, however many appends pass it");
    const pending = await ledger.pendingAlerts();
    t.equal(pending.filter((a) => a.api_key_id === "key_a").length, 2, "pending until acknowledged");
    for (const alert of pending) await ledger.ackAlert(alert);
    t.same(await ledger.pendingAlerts(), []);
  });
}

keyBudgetLedgerSuite(t, "embedded", async () => new EmbeddedLedgerStore(mkdtempSync(join(tmpdir(), "troupe-ledger-"))));
keyBudgetLedgerSuite(t, "threaded", async () => new ThreadedLedgerStore(mkdtempSync(join(tmpdir(), "troupe-ledger-"))));
const redis = await startTestRedis();
t.teardown(() => redis.stop());
const redisStores = prefixedStores((prefix) => new RedisLedgerStore(redis.url, prefix));
keyBudgetLedgerSuite(t, "redis", () => redisStores.create());
const cluster = await startTestRedisCluster();
t.teardown(() => cluster.stop());
const clusterStores = prefixedStores((prefix) => new RedisLedgerStore({ clusterNodes: cluster.nodes }, prefix));
keyBudgetLedgerSuite(t, "cluster", () => clusterStores.create());
