// Where the distributed mode's Redis is: one server (REDIS_URL) or a Redis
// Cluster (REDIS_CLUSTER_NODES, which wins when both are set). Kept apart
// from redis-connection.ts so that deciding the mode never loads ioredis.
import type { Config } from "../core/config.ts";

export type RedisTarget = { url: string } | { clusterNodes: readonly string[] };

/** The configured Redis, or undefined for the embedded mode. */
export function redisTarget(config: Pick<Config, "redisUrl" | "redisClusterNodes">): RedisTarget | undefined {
  if (config.redisClusterNodes.length > 0) return { clusterNodes: config.redisClusterNodes };
  if (config.redisUrl) return { url: config.redisUrl };
  return undefined;
}

export function isCluster(target: RedisTarget): target is { clusterNodes: readonly string[] } {
  return "clusterNodes" in target;
}
