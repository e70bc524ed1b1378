// A usage_key is billed once across a change of USAGE_RECORD_RETENTION_SECONDS
// on Redis and on a Redis Cluster: the generation a record was written into
// under the old window must still be looked in under the new one (generation
// numbers count generation lengths, so the same number means another time
// after the change; tenancy/redis-ledger-store.ts).
import t from "tap";
import { prefixedId } from "../../core/ids.ts";
import { connectRedis, type RedisTarget } from "../../tenancy/redis-connection.ts";
import { RedisLedgerStore } from "../../tenancy/redis-ledger-store.ts";
import { startTestRedisCluster } from "../support/redis-cluster.ts";
import { startTestRedis } from "../support/redis.ts";
import { usage } from "./ledger-store-suite.ts";

t.setTimeout(120_000);
const retentionMs = 60_000;
const march = "2026-03";

/** A time ahead of the real clock that the generation lengths used here (5, 15, 45 s) all divide. */
const aligned = () => Math.ceil((Date.now() + 1_000) / 45_000) * 45_000;

const single = await startTestRedis();
t.teardown(() => single.stop());
const cluster = await startTestRedisCluster();
t.teardown(() => cluster.stop());
const targets: Array<[string, string | RedisTarget]> = [
  ["redis", single.url],
  ["redis cluster", { clusterNodes: cluster.nodes }],
];

for (const [name, target] of targets) {
  // Shorter (more generations per time) and longer (fewer): both renumber the generations.
  for (const factor of [1 / 3, 3]) {
    t.test(`${name}: a usage_key appended before the retention changes (×${factor.toFixed(2)}) is billed once after it`, async (t) => {
      // Key prefixes of this run: on a shared Redis an earlier run's hashes live on until Redis expires them.
      const prefix = `${prefixedId("run")}:bill:`;
      const project = prefixedId("prj");
      // A clock from now on (Redis expires the hashes by its own clock, after this test), placed so that the
      // generation hash written after the change is another one than before it, whichever the factor.
      let now = aligned() + 15_000 + 100;
      let ledger = new RedisLedgerStore(target, prefix, retentionMs, () => now);
      const first = usage({ project_id: project });
      await ledger.append([first]);
      await ledger.close();

      // 25 s later, well within both windows, the store reopens under the new setting and the record comes again.
      now += 25_001;
      ledger = new RedisLedgerStore(target, prefix, retentionMs * factor, () => now);
      t.teardown(() => ledger.close());
      await ledger.append([first]);
      const rows = await ledger.usageRows(project, march, march);
      t.equal(rows.reduce((sum, row) => sum + row.calls, 0), 1, "one call in the counters");
      t.equal(await ledger.spent(project, march), first.cost_nanos, "spent once");
      t.same((await ledger.records(project, march)).map((r) => r.usage_key), [first.usage_key], "one record");

      // A new call after the change is billed, and the old record still counts as billed.
      const second = usage({ project_id: project });
      await ledger.append([second, first]);
      t.equal(await ledger.spent(project, march), first.cost_nanos + second.cost_nanos, "the new call billed, the old one not again");
      t.equal((await ledger.records(project, march)).length, 2);
    });
  }
}

for (const [name, target] of targets) {
  t.test(`${name}: two replicas under different retentions at once see each other's generations`, async (t) => {
    const prefix = `${prefixedId("run")}:bill:`;
    const project = prefixedId("prj");
    // Placed so that the two replicas' current generations are two hashes (15 s from +15 s, 5 s from +20 s).
    const now = aligned() + 22_000;
    // A rolling change of the setting: one replica still on the old window, one on the new.
    const older = new RedisLedgerStore(target, prefix, retentionMs, () => now);
    const newer = new RedisLedgerStore(target, prefix, retentionMs / 3, () => now + 1);
    t.teardown(() => Promise.all([older.close(), newer.close()]));
    const [a, b] = [usage({ project_id: project }), usage({ project_id: project })];
    await older.append([a]);
    await newer.append([b, a]);
    // The older replica has not read the index since the newer one wrote its generation.
    await older.append([b]);
    t.equal(await older.spent(project, march), a.cost_nanos + b.cost_nanos, "each call billed once, by whichever replica saw it again");
    t.equal((await newer.records(project, march)).length, 2);
  });

  t.test(`${name}: a generation that starts at the same time under both windows keeps the longer expiry`, async (t) => {
    const prefix = `${prefixedId("run")}:bill:`;
    const project = prefixedId("prj");
    // A start that both generation lengths (15 s and 5 s) divide, a little ahead of the real clock.
    const start = Math.ceil((Date.now() + 60_000) / 15_000) * 15_000;
    const first = new RedisLedgerStore(target, prefix, retentionMs, () => start + 10);
    await first.append([usage({ project_id: project })]);
    await first.close();
    const second = new RedisLedgerStore(target, prefix, retentionMs / 3, () => start + 20);
    t.teardown(() => second.close());
    await second.append([usage({ project_id: project })]);
    const client = connectRedis(typeof target === "string" ? { url: target } : target, {});
    t.teardown(() => client.quit());
    const tag = typeof target === "string" ? project : `{${project}}`;
    const hash = `${prefix}calls:${tag}:${start}`;
    t.equal(await client.hlen(hash), 2, "both entries in the hash named by the shared start time");
    t.equal(Number(await client.call("PEXPIRETIME", hash)), start + 5 * 15_000, "expires when the longer generation is due, not the shorter");
    t.equal(Number(await client.zscore(`${prefix}gens:${tag}`, hash)), start + 5 * 15_000);
  });

  t.test(`${name}: a record in a hash of the ledger before the index (named by generation number) is billed once`, async (t) => {
    const prefix = `${prefixedId("run")}:bill:`;
    const project = prefixedId("prj");
    const now = Date.now();
    const client = connectRedis(typeof target === "string" ? { url: target } : target, {});
    t.teardown(() => client.quit());
    const tag = typeof target === "string" ? project : `{${project}}`;
    // What the previous version wrote: generation floor(now / 15 s), expiring when the fifth after it begins.
    const generation = Math.floor(now / 15_000);
    const legacy = `${prefix}calls:${tag}:${generation}`;
    const old = usage({ project_id: project });
    await client.hset(legacy, old.usage_key, `1,${Date.parse(old.created_at)},10,5,0,1000,1`);
    await client.pexpireat(legacy, (generation + 5) * 15_000);
    const ledger = new RedisLedgerStore(target, prefix, retentionMs, () => now + 1_000);
    t.teardown(() => ledger.close());
    await ledger.append([old]);
    t.equal(await ledger.spent(project, march), 0, "not billed again");
    t.equal(Number(await client.zscore(`${prefix}gens:${tag}`, legacy)) > now, true, "the old hash is listed in the index");
  });
}
