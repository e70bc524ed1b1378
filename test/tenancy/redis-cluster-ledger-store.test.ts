// The ledger suite on a 3-primary Redis Cluster (TEST_REDIS_CLUSTER_NODES when set, else its own): each
// script touches one project's keys (one slot); projects spread over the
// primaries.
import t from "tap";
import { RedisLedgerStore } from "../../tenancy/redis-ledger-store.ts";
import { prefixedStores } from "../support/prefixed-stores.ts";
import { startTestRedisCluster } from "../support/redis-cluster.ts";
import { ledgerSuite } from "./ledger-store-suite.ts";

t.setTimeout(120_000);
const cluster = await startTestRedisCluster();
t.teardown(() => cluster.stop());
const target = { clusterNodes: cluster.nodes };

ledgerSuite(t, { name: "redis cluster", ...prefixedStores((prefix) => new RedisLedgerStore(target, prefix)) });
