// The data store suite on a 3-primary Redis Cluster (TEST_REDIS_CLUSTER_NODES when set, else its own):
// every batch is one script, so its keys must share one slot there.
import t from "tap";
import { RedisDataStore } from "../../tenancy/redis-data-store.ts";
import type { DataStore } from "../../tenancy/data-store.ts";
import { startTestRedisCluster } from "../support/redis-cluster.ts";
import { storeSuite } from "./data-store-suite.ts";

t.setTimeout(60_000);
const cluster = await startTestRedisCluster();
t.teardown(() => cluster.stop());
const target = { clusterNodes: cluster.nodes };
const prefixes = new WeakMap<DataStore, string>();
let n = 0;

storeSuite(t, {
  name: "redis cluster",
  async create() {
    n += 1;
    const prefix = `test:${process.pid}:${Date.now()}:${n}:`;
    const store = new RedisDataStore(target, prefix);
    prefixes.set(store, prefix);
    return store;
  },
  async reopen(store) {
    const prefix = prefixes.get(store);
    if (!prefix) throw new Error("unknown store");
    await store.close();
    const reopened = new RedisDataStore(target, prefix);
    prefixes.set(reopened, prefix);
    return reopened;
  },
});
