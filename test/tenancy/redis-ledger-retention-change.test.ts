// A usage_key is billed once across a change of USAGE_RECORD_RETENTION_SECONDS
// on Redis and on a Redis Cluster: the generation a record was written into
// under the old window must still be looked in under the new one (generation
// numbers count generation lengths, so the same number means another time
// after the change; tenancy/redis-ledger-store.ts).
import t from "tap";
import { prefixedId } from "../../core/ids.ts";
import type { RedisTarget } from "../../tenancy/redis-connection.ts";
import { RedisLedgerStore } from "../../tenancy/redis-ledger-store.ts";
import { startTestRedisCluster } from "../support/redis-cluster.ts";
import { startTestRedis } from "../support/redis.ts";
import { usage } from "./ledger-store-suite.ts";

t.setTimeout(120_000);
const retentionMs = 60_000;
const march = "2026-03";

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
      // A clock from now on: Redis expires the hashes by its own clock, after this test.
      let now = Date.now();
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
