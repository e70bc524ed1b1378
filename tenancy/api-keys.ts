// API key management (docs/api/keys.md): creation
// returns the full key once; only its SHA-256 is stored. Revocation is
// written to the store, then broadcast to every replica, where it evicts the
// key from the key cache (key-cache.ts) and closes the connections opened
// with it (key-revocations.ts). Authentication and the per-key rate limit
// live in key-cache.ts and key-rate-limit.ts; this service fronts them so
// the gateway holds one object. A project holds at most API_KEYS_PER_PROJECT
// active keys made by members, exactly even under concurrent creates
// (core/quota-slots.ts); revoking one frees its slot. An environment's
// automatic test key holds no slot: it comes with its environment, which
// ENVIRONMENTS_PER_PROJECT limits, and is never refused.
import type { Clock } from "../core/clock.ts";
import { isoTime } from "../core/clock.ts";
import type { TenancyConfig } from "../core/config.ts";
import { invalidRequest, TroupeError } from "../core/errors.ts";
import { prefixedId } from "../core/ids.ts";
import { applyWithinQuota, quotaExceeded, slotReleaseOps, type QuotaScope } from "../core/quota-slots.ts";
import type { Logger } from "../core/log.ts";
import { requireMembership, requireRole } from "./access.ts";
import { displayPrefix, newApiKey, sha256 } from "./key-format.ts";
import { KeyCache, toRecord } from "./key-cache.ts";
import { KeyLimits, type BatchLaneLimits, type RateLimitWindow } from "./key-rate-limit.ts";
import { KeyRevocations, revocationMessageSchema, type RevocationMessage } from "./key-revocations.ts";
import { keys, quotaScopes } from "./records.ts";
import type { StoredBudget } from "./ledger.ts";
import { TenancyService } from "./tenancy-service.ts";
import { ClaimTakenError, type StoreOp, type DataStore } from "../core/data-store.ts";
import type { ApiKeyRecord, Environment, StoredApiKey } from "./types.ts";

const revokedChannel = "api-keys:revoked";

export interface NewTestKey extends ApiKeyRecord {
  key: string;
}

/** The limits an owner or admin sets on a key, at creation or by PATCH (docs/guides/access-control.md); null clears one. */
export interface KeyLimitsInput {
  rate_limit_per_minute?: number | undefined;
  token_limit_per_minute?: number | null | undefined;
  models?: string[] | null | undefined;
  max_concurrent?: number | null | undefined;
  /** The key's own monthly budget (USD; null: none), enforced beside its project's with the same ledger (tenancy/billing.ts). */
  monthly_budget_usd?: number | null | undefined;
  hard_limit?: boolean | undefined;
  alert_thresholds?: number[] | undefined;
}

/** Where a key's budget is enforced: the ledger, through billing (which tells every replica's budget cache). */
export interface KeyBudgets {
  putBudget(projectId: string, budget: StoredBudget, apiKeyId: string): Promise<void>;
}

/** The project budget's default thresholds, for a key's too. */
export const defaultKeyAlertThresholds = [0.5, 0.8, 1.0];

/** A key's budget as the ledger keeps it; a key without one is never refused and never alerted on. */
function keyBudgetOf(key: StoredApiKey, now: number): StoredBudget {
  if (key.monthly_budget_usd === null) return { monthly_limit_usd: 0, alert_thresholds: [], hard_limit: false, updated_at: isoTime(now) };
  return { monthly_limit_usd: key.monthly_budget_usd, alert_thresholds: key.alert_thresholds, hard_limit: key.hard_limit, updated_at: isoTime(now) };
}

function thresholdsOf(input: number[]): number[] {
  return [...new Set(input)].sort((a, b) => a - b);
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
    this.limits = new KeyLimits(store, clock);
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

  /** `createdBy`: the session user making the key; null for an environment's automatic test key (made by the service, so no member's). */
  private build(input: { name: string; scopes: string[]; live: boolean } & KeyLimitsInput, env: Environment, now: number, createdBy: string | null) {
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
      rate_limit_per_minute: input.rate_limit_per_minute ?? this.config.defaultRateLimitPerMinute,
      token_limit_per_minute: input.token_limit_per_minute ?? null,
      models: input.models ? [...new Set(input.models)] : null,
      max_concurrent: input.max_concurrent ?? null,
      monthly_budget_usd: input.monthly_budget_usd ?? null,
      hard_limit: input.hard_limit ?? true,
      alert_thresholds: thresholdsOf(input.alert_thresholds ?? defaultKeyAlertThresholds),
      created_at: isoTime(now),
      last_used_at: null,
      revoked_at: null,
      key_hash: sha256(key),
      created_by: createdBy,
    };
    const ops: StoreOp[] = [
      { op: "claim", key: keys.apiKeyHash(stored.key_hash), value: stored.id },
      { op: "put", key: keys.apiKey(stored.id), value: stored },
      { op: "index", key: keys.environmentKeys(env.id), member: stored.id, score: now },
    ];
    return { ops, stored, created: { ...toRecord(stored), key } };
  }

  /** The automatic test key of a non-production environment, as batch ops. */
  prepareTestKey(env: Environment, now: number): { ops: StoreOp[]; created: NewTestKey } {
    return this.build({ name: `${env.name} test key`, scopes: [], live: false }, env, now, null);
  }

  private async environmentFor(userId: string, environmentId: string) {
    const env = await this.records.environment(environmentId);
    if (!env) throw new TroupeError("not_found", "environment not found");
    const membership = await requireMembership(this.records, userId, env.organization_id, "environment");
    return { env, membership };
  }

  /** The slots of a project's member-made keys; a revoked (or erased) key no longer counts. */
  private keyQuota(projectId: string): QuotaScope {
    const max = this.config.quotas.apiKeysPerProject;
    return {
      scope: quotaScopes.apiKeys(projectId),
      capacity: max,
      counting: async (ids) => new Set((await this.records.apiKeys(ids)).filter((k) => k.revoked_at === null).map((k) => k.id)),
      refusal: () => quotaExceeded("this project holds as many active API keys as it may", max),
    };
  }

  /** `budgets`: where the key's own budget goes when it has one (before the key is answered, so it is never unenforced). */
  async create(
    userId: string,
    environmentId: string,
    input: { name: string; scopes: string[]; live: boolean } & KeyLimitsInput,
    budgets: KeyBudgets,
  ) {
    const { env, membership } = await this.environmentFor(userId, environmentId);
    requireRole(membership, "admin", "creating API keys");
    // `_live_` keys are production keys: billed calls come only from production environments.
    if (input.live && !env.production) {
      throw invalidRequest([{ path: "body.live", message: `a live key can only be created in a production environment; ${env.name} is not one (use live: false for a test key)` }]);
    }
    const now = this.clock.now();
    const built = this.build(input, env, now, userId);
    // The slot first, in one batch with the key: a create refused here (a full
    // project, or the last slot lost to a racing create) has written nothing,
    // in the data store or the ledger.
    const quota = this.keyQuota(env.project_id);
    const slot = await applyWithinQuota(this.store, quota, built.stored.id, built.ops);
    if (built.stored.monthly_budget_usd !== null) {
      // Still before any call with the key: its secret exists only in this
      // answer, so the budget is in force before the key can be presented.
      try {
        await budgets.putBudget(env.project_id, keyBudgetOf(built.stored, now), built.stored.id);
      } catch (error) {
        await this.discard(built.stored, quota.scope, slot);
        throw error;
      }
    }
    return built.created;
  }

  /**
   * Removes a key whose create failed after its slot was taken (its budget
   * could not be written). Its secret was never answered, so it could never
   * be used; removed, it no longer counts and its slot is given back (its
   * holder document marked released, not left naming a key that is gone). If
   * the removal fails too, the key stays unusable and holds its slot until
   * revoked.
   */
  private async discard(stored: StoredApiKey, scope: string, slot: number): Promise<void> {
    const removal: StoreOp[] = [
      { op: "release", key: keys.apiKeyHash(stored.key_hash) },
      { op: "delete", key: keys.apiKey(stored.id) },
      { op: "unindex", key: keys.environmentKeys(stored.environment_id), member: stored.id },
    ];
    try {
      await this.store.apply([...slotReleaseOps(scope, slot, stored.id), ...removal]);
    } catch (error) {
      // The turn from this key is taken only once the key stopped counting: a
      // member revoked it (it is listed) and a create has its slot already.
      if (error instanceof ClaimTakenError) await this.store.apply(removal).catch((again: unknown) => this.couldNotDiscard(stored, again));
      else this.couldNotDiscard(stored, error);
    }
  }

  private couldNotDiscard(stored: StoredApiKey, error: unknown): void {
    this.log.warn("could not remove an API key whose budget was not written", { error, key_id: stored.id });
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

  /**
   * Changes a key's limits (owners and admins). In force at once on this
   * replica (its cached record is evicted) and on every other one within the
   * key cache's revalidation window (KEY_CACHE_REVALIDATE_MS), as a revocation
   * missed by broadcast is. A revoked key cannot be changed.
   */
  async update(userId: string, keyId: string, input: { name?: string | undefined } & KeyLimitsInput, budgets: KeyBudgets): Promise<ApiKeyRecord> {
    const stored = await this.records.apiKey(keyId);
    if (!stored) throw new TroupeError("not_found", "API key not found");
    const membership = await requireMembership(this.records, userId, stored.organization_id, "API key");
    requireRole(membership, "admin", "changing API keys");
    if (stored.revoked_at) throw new TroupeError("conflict", "this API key is revoked; its limits can no longer change");
    const changed: StoredApiKey = { ...stored };
    if (input.name !== undefined) changed.name = input.name;
    if (input.rate_limit_per_minute !== undefined) changed.rate_limit_per_minute = input.rate_limit_per_minute;
    if (input.token_limit_per_minute !== undefined) changed.token_limit_per_minute = input.token_limit_per_minute;
    if (input.models !== undefined) changed.models = input.models === null ? null : [...new Set(input.models)];
    if (input.max_concurrent !== undefined) changed.max_concurrent = input.max_concurrent;
    if (input.monthly_budget_usd !== undefined) changed.monthly_budget_usd = input.monthly_budget_usd;
    if (input.hard_limit !== undefined) changed.hard_limit = input.hard_limit;
    if (input.alert_thresholds !== undefined) changed.alert_thresholds = thresholdsOf(input.alert_thresholds);
    if (input.monthly_budget_usd !== undefined || input.hard_limit !== undefined || input.alert_thresholds !== undefined) {
      // The ledger first: in force on every replica within milliseconds (billing's broadcast), and a failure here leaves the record as it was.
      await budgets.putBudget(stored.project_id, keyBudgetOf(changed, this.clock.now()), keyId);
    }
    await this.store.apply([{ op: "put", key: keys.apiKey(keyId), value: changed }]);
    this.cache.evict(stored.key_hash);
    return toRecord(changed);
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

  /** Reserves an AI call's estimated tokens for a key with a token limit (see key-rate-limit.ts); the function returned releases what was not billed. */
  reserveTokens(record: ApiKeyRecord, requestId: string, tokens: number): (() => void) | undefined | Promise<(() => void) | undefined> {
    return this.limits.reserveTokens(record, requestId, tokens);
  }

  /** The same limits counted in windows of the key's batch lines, apart from its interactive calls' (see key-rate-limit.ts). */
  batchLimits(): BatchLaneLimits {
    return this.limits.batchLane();
  }

  /** One more call in flight for a key with max_concurrent (see key-rate-limit.ts); the function returned ends it. */
  enterCall(record: ApiKeyRecord): (() => void) | undefined {
    return this.limits.enterCall(record);
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
