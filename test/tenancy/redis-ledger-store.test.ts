import t from "tap";
import { RedisLedgerStore } from "../../tenancy/redis-ledger-store.ts";
import { prefixedStores } from "../support/prefixed-stores.ts";
import { startTestRedis } from "../support/redis.ts";
import { ledgerSuite } from "./ledger-store-suite.ts";

const redis = await startTestRedis();
t.teardown(() => redis.stop());

ledgerSuite(t, { name: "redis", ...prefixedStores((prefix) => new RedisLedgerStore(redis.url, prefix)) });
