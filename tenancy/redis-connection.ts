// Opens the distributed mode's Redis client: one server or a Redis Cluster
// (redis-target.ts). ioredis's Cluster has the same command API as a single
// client (defineCommand, MULTI, pub/sub) and routes each command to the
// primary of its keys' slot, so the stores differ only in key names: in
// cluster mode every multi-key script touches keys of one hash slot.
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from "ioredis";
import { isCluster, type RedisTarget } from "./redis-target.ts";

export { isCluster, type RedisTarget };

/** A single client or a cluster client: the stores use only what both offer. */
export type RedisClient = Redis | Cluster;

/**
 * Opens a client. `options` apply to every connection (one per primary in
 * cluster mode). Cluster: a MOVED/ASK after a resharding or failover is
 * followed by ioredis; while the cluster is down, commands wait in the
 * offline queue and retry, as they do on a single server.
 */
export function connectRedis(target: RedisTarget, options: RedisOptions): RedisClient {
  // Auto-pipelining on a single server: the commands issued in one event-loop
  // turn leave in one write(2), not one each (a Dapr agent turn's events,
  // rate-limit script and directory update: 2.0 writes to Redis a turn before,
  // 0.65 after; docs/benchmarks.md, P4). Not on a cluster: there ioredis
  // refused an auto-pipeline of the ledger's per-project scripts ("All keys in
  // the pipeline should belong to the same slots allocation group").
  if (!isCluster(target)) return new Redis(target.url, { ...options, enableAutoPipelining: true });
  const { maxRetriesPerRequest, enableOfflineQueue, retryStrategy, ...redisOptions } = options;
  const clusterOptions: ClusterOptions = {
    redisOptions: { ...redisOptions, maxRetriesPerRequest },
    enableOfflineQueue: enableOfflineQueue ?? true,
    // The cluster's own retry (refreshing the slot map) follows the node's.
    clusterRetryStrategy: retryStrategy ? (times) => retryStrategy(times) : () => 250,
    // MOVED/ASK/TRYAGAIN/CLUSTERDOWN redirections per command before it fails.
    maxRedirections: 32,
  };
  const seeds = target.clusterNodes.map(parseNode);
  // The client opens connections to primaries it discovers (CLUSTER SLOTS), not only to the seeds: credentials and TLS apply to all.
  const secured = seeds.find((seed) => seed.password !== undefined || seed.tls);
  if (secured) {
    clusterOptions.redisOptions = {
      ...clusterOptions.redisOptions,
      ...(secured.username ? { username: secured.username } : {}),
      ...(secured.password !== undefined ? { password: secured.password } : {}),
      ...(secured.tls ? { tls: {} } : {}),
    };
  }
  return new Cluster(
    seeds.map(({ host, port }) => ({ host, port })),
    clusterOptions,
  );
}

/** `host:port` or `redis[s]://[[user]:password@]host:port` (REDIS_CLUSTER_NODES). */
function parseNode(node: string): { host: string; port: number; username?: string; password?: string; tls: boolean } {
  const url = new URL(node.includes("://") ? node : `redis://${node}`);
  return {
    host: url.hostname,
    port: Number(url.port || 6379),
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
    tls: url.protocol === "rediss:",
  };
}

/** The primaries of a cluster client (each scanned in turn), or the single client itself. */
export function primaries(client: RedisClient): Redis[] {
  return client instanceof Cluster ? client.nodes("master") : [client];
}
