// API keys (spec §4.8, §5; DESIGN.md §4 "API keys"): creation returns the
// full key once; only its SHA-256 is stored. Authentication on the hot path
// is a Map lookup: records are cached in process, revocations are broadcast
// to every replica, and a cached record is re-read in the background once it
// is older than half the revalidation window and synchronously past it, so
// a replica that missed a broadcast still refuses a revoked key within
// KEY_CACHE_REVALIDATE_MS (2 s by default).
import type { Clock } from "../core/clock.ts";
import { isoTime } from "../core/clock.ts";
import type { TenancyConfig } from "../core/config.ts";
import { TroupeError } from "../core/errors.ts";
import { prefixedId } from "../core/ids.ts";
import type { Logger } from "../core/log.ts";
import { requireMembership, requireRole } from "./access.ts";
import { displayPrefix, newApiKey, sha256 } from "./key-format.ts";
import { keys, recordsOf, type Records } from "./records.ts";
import type { StoreOp, DataStore } from "./data-store.ts";
import type { ApiKeyRecord, Environment, StoredApiKey } from "./types.ts";

const revokedChannel = "api-keys:revoked";
const lastUsedWriteEveryMs = 60_000; // last_used_at is advisory: one write a minute per key
const negativeCacheMs = 1_000; // unknown keys: bounds store lookups from garbage credentials
const negativeCacheMax = 10_000;

export interface NewTestKey extends ApiKeyRecord {
  key: string;
}

interface CacheEntry {
  hash: string;
  record: ApiKeyRecord;
  fetchedAt: number;
  refreshing: boolean;
}

export class ApiKeyService {
  private readonly store: DataStore;
  private readonly records: Records;
  private readonly config: TenancyConfig;
  private readonly clock: Clock;
  private readonly log: Logger;
  /**
   * Keyed by the presented key itself so a warm request costs one Map lookup
   * and no hashing. This is process memory only; nothing here is persisted.
   */
  private readonly cache = new Map<string, CacheEntry>();
  private readonly presentedByHash = new Map<string, string>();
  private readonly unknown = new Map<string, number>();
  private readonly lastUsedWritten = new Map<string, number>();

  constructor(store: DataStore, config: TenancyConfig, clock: Clock, log: Logger) {
    this.store = store;
    this.records = recordsOf(store);
    this.config = config;
    this.clock = clock;
    this.log = log;
  }

  /** Subscribes to revocations from other replicas. */
  async start(): Promise<void> {
    await this.store.subscribe(revokedChannel, (hash) => this.evict(hash));
  }

  private build(input: { name: string; scopes: string[]; live: boolean; rateLimitPerMinute?: number | undefined }, env: Environment, now: number) {
    const key = newApiKey(this.config.apiKeyPrefix, input.live);
    const stored: StoredApiKey = {
      id: prefixedId("key", now),
      name: input.name,
      display_prefix: displayPrefix(key, this.config.apiKeyPrefix),
      scopes: [...new Set(input.scopes)],
      live: input.live,
      environment_id: env.id,
      project_id: env.project_id,
      organization_id: env.organization_id,
      rate_limit_per_minute: input.rateLimitPerMinute ?? this.config.defaultRateLimitPerMinute,
      created_at: isoTime(now),
      last_used_at: null,
      revoked_at: null,
      key_hash: sha256(key),
    };
    const ops: StoreOp[] = [
      { op: "claim", key: keys.apiKeyHash(stored.key_hash), value: stored.id },
      { op: "put", key: keys.apiKey(stored.id), value: stored },
      { op: "index", key: keys.environmentKeys(env.id), member: stored.id, score: now },
    ];
    return { ops, created: { ...toRecord(stored), key } };
  }

  /** The automatic test key of a non-production environment, as batch ops. */
  prepareTestKey(env: Environment, now: number): { ops: StoreOp[]; created: NewTestKey } {
    return this.build({ name: `${env.name} test key`, scopes: [], live: false }, env, now);
  }

  private async environmentFor(userId: string, environmentId: string) {
    const env = await this.records.environment(environmentId);
    if (!env) throw new TroupeError("not_found", "environment not found");
    const membership = await requireMembership(this.records, userId, env.organization_id, "environment");
    return { env, membership };
  }

  async create(userId: string, environmentId: string, input: { name: string; scopes: string[]; live: boolean; rate_limit_per_minute?: number | undefined }) {
    const { env, membership } = await this.environmentFor(userId, environmentId);
    requireRole(membership, "admin", "creating API keys");
    const built = this.build({ ...input, rateLimitPerMinute: input.rate_limit_per_minute }, env, this.clock.now());
    await this.store.apply(built.ops);
    return built.created;
  }

  async list(userId: string, environmentId: string, limit: number, cursor: string | null | undefined) {
    await this.environmentFor(userId, environmentId);
    const page = await this.store.page(keys.environmentKeys(environmentId), limit, cursor);
    const stored = await this.records.apiKeys(page.members);
    const used = await this.store.getMany(stored.map((k) => keys.apiKeyUsed(k.id)));
    const data = stored.map((k, i) => {
      const lastUsed = used[i];
      return { ...toRecord(k), last_used_at: typeof lastUsed === "string" ? lastUsed : k.last_used_at };
    });
    return { data, next_cursor: page.nextCursor };
  }

  async revoke(userId: string, keyId: string): Promise<ApiKeyRecord> {
    const stored = await this.records.apiKey(keyId);
    if (!stored) throw new TroupeError("not_found", "API key not found");
    const membership = await requireMembership(this.records, userId, stored.organization_id, "API key");
    requireRole(membership, "admin", "revoking API keys");
    if (stored.revoked_at) return toRecord(stored);
    const revoked: StoredApiKey = { ...stored, revoked_at: isoTime(this.clock.now()) };
    await this.store.apply([{ op: "put", key: keys.apiKey(keyId), value: revoked }]);
    // Refused at once here, and on other replicas as soon as the broadcast lands.
    this.evict(stored.key_hash);
    await this.store.publish(revokedChannel, stored.key_hash).catch((error: unknown) => {
      this.log.warn("revocation broadcast failed; other replicas catch up on revalidation", { error });
    });
    return toRecord(revoked);
  }

  private evict(hash: string): void {
    const presented = this.presentedByHash.get(hash);
    if (presented === undefined) return;
    this.cache.delete(presented);
    this.presentedByHash.delete(hash);
  }

  /**
   * The live record of a presented key, or a 401. A warm key is answered
   * synchronously from memory; otherwise the store is read.
   */
  authenticate(presented: string): ApiKeyRecord | Promise<ApiKeyRecord> {
    const cached = this.cache.get(presented);
    if (cached) {
      const age = this.clock.now() - cached.fetchedAt;
      const window = this.config.keyCacheRevalidateMs;
      if (age < window) {
        if (age >= window / 2 && !cached.refreshing) {
          cached.refreshing = true;
          void this.fetch(presented, cached.hash).catch(() => (cached.refreshing = false));
        }
        return this.accept(cached.record);
      }
    }
    return this.authenticateFromStore(presented);
  }

  private async authenticateFromStore(presented: string): Promise<ApiKeyRecord> {
    const hash = sha256(presented);
    const now = this.clock.now();
    const negativeUntil = this.unknown.get(hash);
    if (negativeUntil !== undefined && negativeUntil > now) throw unknownKey();
    const record = await this.fetch(presented, hash);
    if (!record) {
      if (this.unknown.size >= negativeCacheMax) this.unknown.clear();
      this.unknown.set(hash, now + negativeCacheMs);
      throw unknownKey();
    }
    return this.accept(record);
  }

  private accept(record: ApiKeyRecord): ApiKeyRecord {
    if (record.revoked_at) throw new TroupeError("unauthorized", "this API key was revoked");
    this.touch(record);
    return record;
  }

  private async fetch(presented: string, hash: string): Promise<ApiKeyRecord | undefined> {
    const id = await this.store.lookup(keys.apiKeyHash(hash));
    const stored = id ? await this.records.apiKey(id) : undefined;
    if (!stored) {
      this.evict(hash);
      return undefined;
    }
    const record = toRecord(stored);
    this.cache.set(presented, { hash, record, fetchedAt: this.clock.now(), refreshing: false });
    this.presentedByHash.set(hash, presented);
    return record;
  }

  private touch(record: ApiKeyRecord): void {
    const now = this.clock.now();
    const last = this.lastUsedWritten.get(record.id) ?? 0;
    if (now - last < lastUsedWriteEveryMs) return;
    this.lastUsedWritten.set(record.id, now);
    void this.store.apply([{ op: "put", key: keys.apiKeyUsed(record.id), value: isoTime(now) }]).catch((error: unknown) => {
      this.log.warn("could not record last_used_at", { key_id: record.id, error });
    });
  }

  /**
   * Per-key requests-per-minute limit: a fixed 60 s window, exact across
   * replicas on Redis. Synchronous when the store counts in process.
   */
  checkRateLimit(record: ApiKeyRecord): void | Promise<void> {
    const counterKey = record.id; // key ids are unique and prefixed (key_…): no other counter shares them
    if (this.store.hitLocal) return enforceLimit(record, this.store.hitLocal(counterKey, 60_000));
    return this.store.hit(counterKey, 60_000).then((hit) => enforceLimit(record, hit));
  }
}

function enforceLimit(record: ApiKeyRecord, hit: { count: number; resetInMs: number }): void {
  if (hit.count > record.rate_limit_per_minute) {
    throw new TroupeError("rate_limited", `rate limit of ${record.rate_limit_per_minute} requests per minute exceeded`, {
      retryAfterSeconds: Math.max(1, Math.ceil(hit.resetInMs / 1000)),
    });
  }
}

function unknownKey(): TroupeError {
  return new TroupeError("unauthorized", "the API key is not valid");
}

function toRecord(stored: StoredApiKey): ApiKeyRecord {
  const { key_hash: _hash, ...record } = stored;
  return record;
}
