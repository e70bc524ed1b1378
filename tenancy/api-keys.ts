// API key management (docs/api/keys.md): creation
// returns the full key once; only its SHA-256 is stored. Revocation is
// written to the store, then broadcast to every replica, where it evicts the
// key from the key cache (key-cache.ts) and closes the connections opened
// with it (key-revocations.ts). Authentication and the per-key rate limit
// live in key-cache.ts and key-rate-limit.ts; this service fronts them so
// the gateway holds one object.
import type { Clock } from "../core/clock.ts";
import { isoTime } from "../core/clock.ts";
import type { TenancyConfig } from "../core/config.ts";
import { invalidRequest, TroupeError } from "../core/errors.ts";
import { prefixedId } from "../core/ids.ts";
import type { Logger } from "../core/log.ts";
import { requireMembership, requireRole } from "./access.ts";
import { displayPrefix, newApiKey, sha256 } from "./key-format.ts";
import { KeyCache, toRecord } from "./key-cache.ts";
import { KeyLimits, type RateLimitWindow } from "./key-rate-limit.ts";
import { KeyRevocations, revocationMessageSchema, type RevocationMessage } from "./key-revocations.ts";
import { keys } from "./records.ts";
import { TenancyService } from "./tenancy-service.ts";
import type { StoreOp, DataStore } from "../core/data-store.ts";
import type { ApiKeyRecord, Environment, StoredApiKey } from "./types.ts";

const revokedChannel = "api-keys:revoked";

export interface NewTestKey extends ApiKeyRecord {
  key: string;
}

export class ApiKeyService extends TenancyService {
  private readonly config: TenancyConfig;
  private readonly log: Logger;
  private readonly cache: KeyCache;
  /** Requests and tokens per minute; also the UsageSink that counts billed tokens. */
  readonly limits: KeyLimits;
  private sweeper: NodeJS.Timeout | undefined;
  /** Connections opened with a key, closed when it is revoked. */
  readonly revocations = new KeyRevocations();

  constructor(store: DataStore, config: TenancyConfig, clock: Clock, log: Logger) {
    super(store, clock);
    this.config = config;
    this.log = log;
    this.cache = new KeyCache(store, config, clock, log);
    this.limits = new KeyLimits(store);
  }

  /** Subscribes to revocations broadcast by every replica (this one included). */
  async start(): Promise<void> {
    await this.store.subscribe(revokedChannel, (message) => {
      const parsed = parseRevocation(message);
      if (!parsed) {
        this.log.warn("ignored a malformed revocation broadcast");
        return;
      }
      this.revokedHere(parsed);
    });
    // Backstop for a missed broadcast (a Redis reconnect drops pub/sub
    // messages): keys with open connections are re-read every revalidation
    // window, as cached keys are, so their sockets close within it anyway.
    this.sweeper = setInterval(() => void this.sweepOpenConnections(), this.config.keyCacheRevalidateMs);
    this.sweeper.unref();
  }

  stop(): void {
    clearInterval(this.sweeper);
  }

  private async sweepOpenConnections(): Promise<void> {
    const ids = this.revocations.keyIds();
    if (ids.length === 0) return;
    try {
      const live = new Set((await this.records.apiKeys(ids)).filter((k) => !k.revoked_at).map((k) => k.id));
      for (const id of ids) if (!live.has(id)) this.revocations.revoked(id);
    } catch (error) {
      this.log.warn("could not re-check the keys of open connections", { error });
    }
  }

  private revokedHere(message: RevocationMessage): void {
    this.cache.evict(message.key_hash);
    this.revocations.revoked(message.key_id);
  }

  private build(input: { name: string; scopes: string[]; live: boolean; rateLimitPerMinute?: number | undefined; tokenLimitPerMinute?: number | undefined }, env: Environment, now: number) {
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
      token_limit_per_minute: input.tokenLimitPerMinute ?? null,
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

  async create(
    userId: string,
    environmentId: string,
    input: { name: string; scopes: string[]; live: boolean; rate_limit_per_minute?: number | undefined; token_limit_per_minute?: number | undefined },
  ) {
    const { env, membership } = await this.environmentFor(userId, environmentId);
    requireRole(membership, "admin", "creating API keys");
    // `_live_` keys are production keys: billed calls come only from production environments.
    if (input.live && !env.production) {
      throw invalidRequest([{ path: "body.live", message: `a live key can only be created in a production environment; ${env.name} is not one (use live: false for a test key)` }]);
    }
    const built = this.build({ ...input, rateLimitPerMinute: input.rate_limit_per_minute, tokenLimitPerMinute: input.token_limit_per_minute }, env, this.clock.now());
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
    // Refused (and its sockets closed) at once here, and on other replicas as soon as the broadcast lands.
    const message: RevocationMessage = { key_id: stored.id, key_hash: stored.key_hash };
    this.revokedHere(message);
    await this.store.publish(revokedChannel, JSON.stringify(message)).catch((error: unknown) => {
      this.log.warn("revocation broadcast failed; other replicas catch up on revalidation", { error });
    });
    return toRecord(revoked);
  }

  /** Keys deleted with their organization: refused here at once, and on every replica once the revocation broadcast lands. */
  async broadcastRemoved(removed: readonly StoredApiKey[]): Promise<void> {
    for (const stored of removed) {
      const message: RevocationMessage = { key_id: stored.id, key_hash: stored.key_hash };
      this.revokedHere(message);
      await this.store.publish(revokedChannel, JSON.stringify(message)).catch((error: unknown) => {
        this.log.warn("revocation broadcast failed; other replicas catch up on revalidation", { error });
      });
    }
  }

  /** The live record of a presented key, or a 401 (see key-cache.ts). */
  authenticate(presented: string): ApiKeyRecord | Promise<ApiKeyRecord> {
    return this.cache.authenticate(presented);
  }

  /** Per-key requests- and tokens-per-minute limits (see key-rate-limit.ts). */
  checkRateLimit(record: ApiKeyRecord): RateLimitWindow | Promise<RateLimitWindow> {
    return this.limits.check(record);
  }
}

function parseRevocation(message: string): RevocationMessage | undefined {
  try {
    const parsed = revocationMessageSchema.safeParse(JSON.parse(message));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
