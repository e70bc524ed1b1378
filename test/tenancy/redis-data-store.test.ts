import t from "tap";
import { RedisDataStore } from "../../tenancy/redis-data-store.ts";
import { prefixedStores } from "../support/prefixed-stores.ts";
import { startTestRedis } from "../support/redis.ts";
import { storeSuite } from "./data-store-suite.ts";

const redis = await startTestRedis();
t.teardown(() => redis.stop());

storeSuite(t, { name: "redis", ...prefixedStores((prefix) => new RedisDataStore(redis.url, prefix)) });
