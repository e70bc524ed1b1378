import t from "tap";
import type { LedgerStore } from "../../tenancy/ledger.ts";
import { RedisLedgerStore } from "../../tenancy/redis-ledger-store.ts";
import { startTestRedis } from "../support/redis.ts";
import { ledgerSuite } from "./ledger-store-suite.ts";

const redis = await startTestRedis();
t.teardown(() => redis.stop());
const prefixes = new WeakMap<LedgerStore, string>();
let n = 0;

const open = (prefix: string) => {
  const store = new RedisLedgerStore(redis.url, prefix);
  prefixes.set(store, prefix);
  return store;
};
const prefixOf = (store: LedgerStore) => {
  const prefix = prefixes.get(store);
  if (!prefix) throw new Error("unknown store");
  return prefix;
};

ledgerSuite(t, {
  name: "redis",
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
