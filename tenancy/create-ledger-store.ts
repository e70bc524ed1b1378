// The ledger follows the data store: Redis when REDIS_URL or
// REDIS_CLUSTER_NODES is set (every replica shares it), lmdb under the data
// directory otherwise, on its own thread (threaded-ledger-store.ts). ioredis is imported only when needed,
// as for the data store.
import type { Config } from "../core/config.ts";
import { ThreadedLedgerStore } from "./threaded-ledger-store.ts";
import type { LedgerStore } from "./ledger.ts";
import { redisTarget } from "./redis-target.ts";

export async function createLedgerStore(config: Config): Promise<LedgerStore> {
  const redis = redisTarget(config);
  if (redis) {
    const { RedisLedgerStore } = await import("./redis-ledger-store.ts");
    return new RedisLedgerStore(redis, undefined, config.usageRetentionSeconds * 1000);
  }
  return new ThreadedLedgerStore(config.dataDir, config.usageRetentionSeconds * 1000);
}
