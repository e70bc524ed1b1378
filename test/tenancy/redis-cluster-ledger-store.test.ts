// The ledger suite on a 3-primary Redis Cluster (TEST_REDIS_CLUSTER_NODES when set, else its own): each
// script touches one project's keys (one slot); projects spread over the
// primaries.
import t from "tap";
import type { LedgerStore } from "../../tenancy/ledger.ts";
import { RedisLedgerStore } from "../../tenancy/redis-ledger-store.ts";
import { startTestRedisCluster } from "../support/redis-cluster.ts";
import { ledgerSuite } from "./ledger-store-suite.ts";

t.setTimeout(120_000);
const cluster = await startTestRedisCluster();
t.teardown(() => cluster.stop());
const target = { clusterNodes: cluster.nodes };
const prefixes = new WeakMap<LedgerStore, string>();
let n = 0;

const open = (prefix: string) => {
  const store = new RedisLedgerStore(target, prefix);
  prefixes.set(store, prefix);
  return store;
};
const prefixOf = (store: LedgerStore) => {
  const prefix = prefixes.get(store);
  if (!prefix) throw new Error("unknown store");
  return prefix;
};

ledgerSuite(t, {
  name: "redis cluster",
  async create() {
    n += 1;
    return open(`test:${process.pid}:${Date.now()}:${n}:bill:`);
  },
  async reopen(store) {
    await store.close();
    return open(prefixOf(store));
  },
  async twin(store) {
    return open(prefixOf(store));
  },
});
