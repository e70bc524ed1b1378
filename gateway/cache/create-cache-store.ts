// The cache store, chosen once at start like the data store: Redis (or a
// Redis Cluster) when configured, so every replica shares one cache; lmdb
// under the data directory otherwise. The Redis client is imported only then.
import type { Clock } from "../../core/clock.ts";
import type { Config } from "../config.ts";
import { redisTarget } from "../../tenancy/redis-target.ts";
import { EmbeddedCacheStore } from "./embedded-cache-store.ts";
import type { CacheStore } from "./types.ts";

export async function createCacheStore(config: Config, clock: Clock): Promise<CacheStore> {
  const limits = config.cache;
  const redis = redisTarget(config);
  if (redis) {
    const { RedisCacheStore } = await import("./redis-cache-store.ts");
    return new RedisCacheStore(redis, limits, clock);
  }
  return new EmbeddedCacheStore(config.dataDir, limits, clock);
}
