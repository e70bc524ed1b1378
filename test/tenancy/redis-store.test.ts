import t from "tap";
import { RedisTenancyStore } from "../../tenancy/redis-store.ts";
import type { TenancyStore } from "../../tenancy/store.ts";
import { startTestRedis } from "../support/redis.ts";
import { storeSuite } from "./store-suite.ts";

const redis = await startTestRedis();
t.teardown(() => redis.stop());
const prefixes = new WeakMap<TenancyStore, string>();
let n = 0;

storeSuite(t, {
  name: "redis",
  async create() {
    n += 1;
    const prefix = `test:${process.pid}:${Date.now()}:${n}:`;
    const store = new RedisTenancyStore(redis.url, prefix);
    prefixes.set(store, prefix);
    return store;
  },
  async reopen(store) {
    const prefix = prefixes.get(store);
    if (!prefix) throw new Error("unknown store");
    await store.close();
    const reopened = new RedisTenancyStore(redis.url, prefix);
    prefixes.set(reopened, prefix);
    return reopened;
  },
});
