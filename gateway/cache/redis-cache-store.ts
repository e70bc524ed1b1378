// The cache store on Redis (or a Redis Cluster), shared by every replica.
// Each organization's keys carry its id as the hash tag — `troupe:cache:{org}:…`
// — so one organization's entries, its LRU list and its byte count sit in one
// slot (each script is atomic on one primary) while organizations spread over
// the cluster. Per organization:
//   e:<digest>  the entry, deflated JSON (entry-codec.ts), expiring with PX
//   lru         sorted set: digest → last use (ms)
//   meta        hash: digest → "<stored bytes>|<project id>"
//   bytes       the organization's stored bytes (the quota's count)
// A put evicts the least recently used entries past the quota in the same
// script. An entry that expired on its own is forgotten when a read misses it
// or eviction reaches it (it still counts until then: the quota errs on the
// side of storing less). Keys are made fixed-size (64 hex digits) before
// they get here, so no key grows with the request.
import type { Clock } from "../../core/clock.ts";
import { connectRedis, primaries, type RedisClient, type RedisTarget } from "../../tenancy/redis-connection.ts";
import type { CacheLimits } from "./embedded-cache-store.ts";
import { decodeEntry, encodeEntry, servable } from "./entry-codec.ts";
import type { CacheEntry, CacheScope, CacheStore } from "./types.ts";

// KEYS: entry, lru, meta, bytes. ARGV: value, ttlMs, nowMs, digest, meta, size, quota, entry key prefix (same slot: same hash tag).
const putScript = `
local function forget(d)
  local m = redis.call("HGET", KEYS[3], d)
  redis.call("ZREM", KEYS[2], d)
  redis.call("HDEL", KEYS[3], d)
  redis.call("DEL", ARGV[8] .. d)
  if m then return redis.call("DECRBY", KEYS[4], tonumber(string.match(m, "^(%d+)"))) end
  return tonumber(redis.call("GET", KEYS[4]) or "0")
end
forget(ARGV[4])
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
redis.call("ZADD", KEYS[2], ARGV[3], ARGV[4])
redis.call("HSET", KEYS[3], ARGV[4], ARGV[5])
local total = redis.call("INCRBY", KEYS[4], ARGV[6])
local quota = tonumber(ARGV[7])
local evicted = 0
while total > quota do
  local oldest = redis.call("ZRANGE", KEYS[2], 0, 0)
  if #oldest == 0 then break end
  total = forget(oldest[1])
  evicted = evicted + 1
end
return evicted
`;

// KEYS: lru, meta, bytes. ARGV: entry key prefix, digest… : each digest's entry, listing and bytes removed.
const forgetScript = `
local removed = 0
for i = 2, #ARGV do
  local d = ARGV[i]
  local m = redis.call("HGET", KEYS[2], d)
  redis.call("ZREM", KEYS[1], d)
  redis.call("HDEL", KEYS[2], d)
  redis.call("DEL", ARGV[1] .. d)
  if m then
    redis.call("DECRBY", KEYS[3], tonumber(string.match(m, "^(%d+)")))
    removed = removed + 1
  end
end
return removed
`;

type RedisWithCacheScripts = RedisClient & {
  troupeCachePut(entry: string, lru: string, meta: string, bytes: string, value: Buffer, ttlMs: number, nowMs: number, digest: string, meta2: string, size: number, quota: number, prefix: string): Promise<number>;
  troupeCacheForget(lru: string, meta: string, bytes: string, prefix: string, ...digests: string[]): Promise<number>;
};

export class RedisCacheStore implements CacheStore {
  private readonly redis: RedisWithCacheScripts;
  private readonly limits: CacheLimits;
  private readonly clock: Clock;
  private readonly prefix: string;

  constructor(target: RedisTarget, limits: CacheLimits, clock: Clock, prefix = "troupe:cache:") {
    // As the data store: a short outage delays commands rather than failing them (a cache read that fails is a miss anyway).
    const redis = connectRedis(target, { lazyConnect: false, maxRetriesPerRequest: 40, retryStrategy: () => 250, enableOfflineQueue: true });
    redis.defineCommand("troupeCachePut", { numberOfKeys: 4, lua: putScript });
    redis.defineCommand("troupeCacheForget", { numberOfKeys: 3, lua: forgetScript });
    this.redis = redis as RedisWithCacheScripts;
    this.limits = limits;
    this.clock = clock;
    this.prefix = prefix;
  }

  /** The organization's key prefix; its id is the hash tag (ids are `org_…`: no braces). */
  private orgPrefix(orgId: string): string {
    return `${this.prefix}{${orgId}}:`;
  }

  async get(scope: CacheScope, digest: string): Promise<CacheEntry | undefined> {
    const p = this.orgPrefix(scope.organization_id);
    const bytes = await this.redis.getBuffer(`${p}e:${digest}`);
    if (!bytes) {
      // Expired (or evicted elsewhere): its listing goes too, so the quota stops counting it. Not awaited: a miss answers at once.
      this.redis.troupeCacheForget(`${p}lru`, `${p}meta`, `${p}bytes`, `${p}e:`, digest).catch(() => undefined);
      return undefined;
    }
    const entry = await decodeEntry(bytes);
    const now = this.clock.now();
    if (!entry || !servable(entry, scope.organization_id, scope.project_id, scope.environment_id, now)) return undefined;
    // Its use, for the LRU order; only if still listed (XX), and off the answer's path.
    this.redis.zadd(`${p}lru`, "XX", now, digest).catch(() => undefined);
    return entry;
  }

  async put(digest: string, entry: CacheEntry): Promise<number> {
    const { bytes, jsonBytes } = await encodeEntry(entry);
    if (jsonBytes > this.limits.maxEntryBytes || bytes.length > this.limits.orgQuotaBytes) return 0;
    const ttlMs = Math.max(1, Math.round(entry.expires_ms - this.clock.now()));
    const p = this.orgPrefix(entry.scope.organization_id);
    await this.redis.troupeCachePut(`${p}e:${digest}`, `${p}lru`, `${p}meta`, `${p}bytes`, bytes, ttlMs, this.clock.now(), digest, `${bytes.length}|${entry.scope.project_id}`, bytes.length, this.limits.orgQuotaBytes, `${p}e:`);
    return bytes.length;
  }

  async delete(scope: CacheScope, digest: string): Promise<void> {
    const p = this.orgPrefix(scope.organization_id);
    await this.redis.troupeCacheForget(`${p}lru`, `${p}meta`, `${p}bytes`, `${p}e:`, digest);
  }

  async clearProject(organizationId: string, projectId: string): Promise<number> {
    const p = this.orgPrefix(organizationId);
    const meta = await this.redis.hgetall(`${p}meta`);
    const digests = Object.entries(meta)
      .filter(([, m]) => m.slice(m.indexOf("|") + 1) === projectId)
      .map(([d]) => d);
    let removed = 0;
    // In slices of 500: one script never holds the primary for long.
    for (let i = 0; i < digests.length; i += 500) removed += await this.redis.troupeCacheForget(`${p}lru`, `${p}meta`, `${p}bytes`, `${p}e:`, ...digests.slice(i, i + 500));
    return removed;
  }

  async clearOrganization(organizationId: string): Promise<void> {
    // Every key under the organization's prefix, found by SCAN (listed or not: nothing may stay).
    const pattern = `${this.orgPrefix(organizationId).replace(/[*?[\]\\]/g, "\\$&")}*`;
    for (const node of primaries(this.redis)) {
      let cursor = "0";
      do {
        const [next, found] = await node.scan(cursor, "MATCH", pattern, "COUNT", 1000);
        cursor = next;
        if (found.length > 0) await Promise.all(found.map((k) => node.del(k)));
      } while (cursor !== "0");
    }
  }

  async bytesOf(organizationId: string): Promise<number> {
    return Number((await this.redis.get(`${this.orgPrefix(organizationId)}bytes`)) ?? 0);
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => undefined);
  }
}
