// The data store suite on a 3-primary Redis Cluster (TEST_REDIS_CLUSTER_NODES when set, else its own):
// every batch is one script, so its keys must share one slot there.
import t from "tap";
import { RedisDataStore } from "../../tenancy/redis-data-store.ts";
import { prefixedStores } from "../support/prefixed-stores.ts";
import { startTestRedisCluster } from "../support/redis-cluster.ts";
import { storeSuite } from "./data-store-suite.ts";

t.setTimeout(60_000);
const cluster = await startTestRedisCluster();
t.teardown(() => cluster.stop());
const target = { clusterNodes: cluster.nodes };

storeSuite(t, { name: "redis cluster", ...prefixedStores((prefix) => new RedisDataStore(target, prefix)) });
