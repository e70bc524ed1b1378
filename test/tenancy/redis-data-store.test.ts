import t from "tap";
import { RedisDataStore } from "../../tenancy/redis-data-store.ts";
import type { DataStore } from "../../tenancy/data-store.ts";
import { startTestRedis } from "../support/redis.ts";
import { storeSuite } from "./data-store-suite.ts";

const redis = await startTestRedis();
t.teardown(() => redis.stop());
const prefixes = new WeakMap<DataStore, string>();
let n = 0;

storeSuite(t, {
  name: "redis",
  async create() {
    n += 1;
    const prefix = `test:${process.pid}:${Date.now()}:${n}:`;
    const store = new RedisDataStore(redis.url, prefix);
    prefixes.set(store, prefix);
    return store;
  },
  async reopen(store) {
    const prefix = prefixes.get(store);
    if (!prefix) throw new Error("unknown store");
    await store.close();
    const reopened = new RedisDataStore(redis.url, prefix);
    prefixes.set(reopened, prefix);
    return reopened;
  },
});
