// Redis data store for the distributed mode: every replica reads and
// writes the same records. A batch is one Lua script, so it is atomic: the
// claims are checked first and nothing is written when one is taken. Every
// script declares the keys it touches in KEYS[].
// Durability is Redis's own (the local cluster runs it with appendonly).
//
// On a Redis Cluster (REDIS_CLUSTER_NODES) a batch is not per organization
// (signup claims the e-mail and writes the user, its organization, project
// and session in one batch; accepting an invitation writes the user's and
// the organization's indexes together), so every
// document, claim and index key carries one hash tag, the prefix in braces
// (`{troupe:}doc:…`): one slot, one primary, every batch atomic as on one
// server. Counters and backoff state are single-key and keep untagged names,
// so they spread over the primaries. On one Redis the names stay untagged:
// existing data is read as before (docs/decisions.md).
import {
  ClaimTakenError,
  decodeCursor,
  pageOf,
  type BackoffAdmission,
  type BackoffPolicy,
  type DataStore,
  type IndexPage,
  type StoreOp,
} from "../core/data-store.ts";
import { dataKind, parseVersioned, versionedJson } from "../core/schema-version.ts";
import { connectRedis, isCluster, type RedisClient, type RedisTarget } from "./redis-connection.ts";

// KEYS[i] is the Redis key of ops[i]: the script touches only declared keys,
// as Redis Cluster requires (a batch whose keys span hash slots is refused
// there with CROSSSLOT rather than half-applied).
const applyScript = `
local ops = cjson.decode(ARGV[1])
for i, o in ipairs(ops) do
  if o.op == "claim" and redis.call("EXISTS", KEYS[i]) == 1 then
    return o.key
  end
end
for i, o in ipairs(ops) do
  local k = KEYS[i]
  if o.op == "put" then
    if o.ttlMs then
      redis.call("SET", k, o.value, "PX", o.ttlMs)
    else
      redis.call("SET", k, o.value)
    end
  elseif o.op == "delete" then redis.call("DEL", k)
  elseif o.op == "claim" then redis.call("SET", k, o.value)
  elseif o.op == "release" then redis.call("DEL", k)
  elseif o.op == "index" then redis.call("ZADD", k, o.score, o.member)
  elseif o.op == "unindex" then redis.call("ZREM", k, o.member)
  end
end
return false
`;

export const hitScript = `
local count = redis.call("INCRBY", KEYS[1], ARGV[2])
local ttl = redis.call("PTTL", KEYS[1])
if ttl < 0 then
  redis.call("PEXPIRE", KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}
`;

// Backoff state: a hash {a: attempts, t: last admitted attempt (ms)}. The
// same rule as backoffWaitMs in data-store.ts, computed inside Redis so the
// check and the count are one atomic step for every replica.
const backoffScript = `
local attempts = tonumber(redis.call("HGET", KEYS[1], "a") or "0")
local last = tonumber(redis.call("HGET", KEYS[1], "t") or "0")
local now, free, base, cap, forget = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
if attempts >= free then
  local wait = math.min(cap, base * 2 ^ (attempts - free))
  if now < last + wait then return {0, last + wait - now, attempts} end
end
attempts = redis.call("HINCRBY", KEYS[1], "a", 1)
redis.call("HSET", KEYS[1], "t", now)
redis.call("PEXPIRE", KEYS[1], forget)
return {1, 0, attempts}
`;

const refundScript = `
local attempts = tonumber(redis.call("HGET", KEYS[1], "a") or "0")
if attempts > 0 then redis.call("HINCRBY", KEYS[1], "a", -1) end
return attempts
`;

type RedisWithScripts = RedisClient & {
  troupeApply(...keysThenArgs: string[]): Promise<string | null>;
  troupeBackoff(key: string, now: number, free: number, baseMs: number, capMs: number, forgetMs: number): Promise<[number, number, number]>;
  troupeRefund(key: string): Promise<number>;
  troupeHit(key: string, windowMs: number, by: number): Promise<[number, number]>;
};

export class RedisDataStore implements DataStore {
  readonly kind = "redis" as const;
  private readonly redis: RedisWithScripts;
  private subscriber: RedisClient | undefined;
  private readonly handlers = new Map<string, ((message: string) => void)[]>();
  private readonly prefix: string;
  /** The prefix of documents, claims and indexes: hash-tagged in cluster mode. */
  private readonly recordPrefix: string;

  /** `target`: a redis:// URL (one server) or a cluster's seed nodes. */
  constructor(target: string | RedisTarget, prefix = "troupe:") {
    const where = typeof target === "string" ? { url: target } : target;
    this.prefix = prefix;
    this.recordPrefix = isCluster(where) ? `{${prefix}}` : prefix;
    // A Redis outage of a few seconds (a failover, a network blip) delays
    // commands instead of failing them: ioredis queues them while it
    // reconnects every 250 ms and fails them after 40 attempts (~10 s).
    // Measured by `npm run chaos` (a 5 s cut): with 2 attempts every request
    // arriving during the cut failed with a 500.
    const redis = connectRedis(where, { lazyConnect: false, maxRetriesPerRequest: 40, retryStrategy: () => 250, enableOfflineQueue: true });
    redis.defineCommand("troupeApply", { lua: applyScript }); // numberOfKeys varies: passed first on each call
    redis.defineCommand("troupeBackoff", { numberOfKeys: 1, lua: backoffScript });
    redis.defineCommand("troupeRefund", { numberOfKeys: 1, lua: refundScript });
    redis.defineCommand("troupeHit", { numberOfKeys: 1, lua: hitScript });
    this.redis = redis as RedisWithScripts;
  }

  private doc(key: string): string {
    return `${this.recordPrefix}doc:${key}`;
  }

  async get(key: string): Promise<unknown> {
    const raw = await this.redis.get(this.doc(key));
    return raw === null ? undefined : parseVersioned(dataKind(key), raw);
  }

  async getMany(keys: string[]): Promise<unknown[]> {
    if (keys.length === 0) return [];
    const raws = await this.redis.mget(keys.map((k) => this.doc(k)));
    return raws.map((raw, i) => (raw === null ? undefined : parseVersioned(dataKind(keys[i]!), raw)));
  }

  async lookup(claimKey: string): Promise<string | undefined> {
    const value = await this.redis.get(`${this.recordPrefix}claim:${claimKey}`);
    return value ?? undefined;
  }

  async apply(ops: StoreOp[]): Promise<void> {
    // Values travel pre-serialized so cjson never re-encodes caller JSON; each in its schema-version envelope.
    const wire = ops.map((op) => (op.op === "put" ? { ...op, value: versionedJson(JSON.stringify(op.value)) } : op));
    const redisKeys = ops.map((op) => this.redisKey(op));
    const taken = await this.redis.troupeApply(String(redisKeys.length), ...redisKeys, JSON.stringify(wire));
    if (taken) throw new ClaimTakenError(taken);
  }

  private redisKey(op: StoreOp): string {
    switch (op.op) {
      case "put":
      case "delete":
        return this.doc(op.key);
      case "claim":
      case "release":
        return `${this.recordPrefix}claim:${op.key}`;
      case "index":
      case "unindex":
        return `${this.recordPrefix}idx:${op.key}`;
    }
  }

  async page(indexKey: string, limit: number, cursor?: string | null): Promise<IndexPage> {
    const after = cursor ? decodeCursor(cursor) : undefined;
    const key = `${this.recordPrefix}idx:${indexKey}`;
    const max = after ? String(after.score) : "+inf";
    const members: { member: string; score: number }[] = [];
    let offset = 0;
    const batch = limit + 32;
    while (members.length <= limit) {
      const flat = await this.redis.zrange(key, max, "-inf", "BYSCORE", "REV", "LIMIT", offset, batch, "WITHSCORES");
      if (flat.length === 0) break;
      for (let i = 0; i < flat.length; i += 2) {
        const member = flat[i] ?? "";
        const score = Number(flat[i + 1]);
        // Equal scores come in reverse member order: skip up to and including the cursor.
        if (after && score === after.score && member >= after.member) continue;
        members.push({ member, score });
        if (members.length > limit) break;
      }
      offset += batch;
      if (flat.length < batch * 2) break;
    }
    return pageOf(members, limit);
  }

  async hit(counterKey: string, windowMs: number, by = 1): Promise<{ count: number; resetInMs: number }> {
    const [count, ttl] = await this.redis.troupeHit(`${this.prefix}rl:${counterKey}`, windowMs, by);
    return { count, resetInMs: ttl };
  }

  async backoffAttempt(key: string, policy: BackoffPolicy, now: number): Promise<BackoffAdmission> {
    const [admitted, retryInMs, attempts] = await this.redis.troupeBackoff(
      `${this.prefix}backoff:${key}`,
      now,
      policy.free,
      policy.baseMs,
      policy.capMs,
      policy.forgetMs,
    );
    return { admitted: admitted === 1, retryInMs, attempts };
  }

  async backoffRefund(key: string): Promise<void> {
    await this.redis.troupeRefund(`${this.prefix}backoff:${key}`);
  }

  async backoffClear(key: string): Promise<void> {
    await this.redis.del(`${this.prefix}backoff:${key}`);
  }

  async publish(channel: string, message: string): Promise<void> {
    await this.redis.publish(`${this.prefix}${channel}`, message);
  }

  async subscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    if (!this.subscriber) {
      this.subscriber = this.redis.duplicate();
      this.subscriber.on("message", (ch: string, message: string) => {
        for (const handler of this.handlers.get(ch) ?? []) handler(message);
      });
    }
    const full = `${this.prefix}${channel}`;
    const list = this.handlers.get(full) ?? [];
    list.push(onMessage);
    this.handlers.set(full, list);
    await this.subscriber.subscribe(full);
  }

  async unsubscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    const full = `${this.prefix}${channel}`;
    const list = (this.handlers.get(full) ?? []).filter((handler) => handler !== onMessage);
    if (list.length > 0) {
      this.handlers.set(full, list);
      return;
    }
    this.handlers.delete(full);
    // The subscriber connection sends commands in order: a SUBSCRIBE to the same
    // channel issued after this still lands after it, so it ends subscribed.
    await this.subscriber?.unsubscribe(full);
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.redis.quit(), this.subscriber?.quit()]);
  }
}
