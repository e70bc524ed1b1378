// The key cache: authentication of presented API keys on the hot path is a
// Map lookup. Records are cached in process, revocations evict them (locally
// at once, on other replicas when the broadcast lands), and a cached record
// is re-read in the background once it is older than half the revalidation
// window and synchronously past it, so a replica that missed a broadcast
// still refuses a revoked key within KEY_CACHE_REVALIDATE_MS (2 s default).
import type { Clock } from "../core/clock.ts";
import { isoTime } from "../core/clock.ts";
import type { TenancyConfig } from "../core/config.ts";
import { TroupeError } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import type { DataStore } from "../core/data-store.ts";
import { sha256 } from "./key-format.ts";
import { keys } from "./records.ts";
import { TenancyService } from "./tenancy-service.ts";
import type { ApiKeyRecord, StoredApiKey } from "./types.ts";

const lastUsedWriteEveryMs = 60_000; // last_used_at is advisory: one write a minute per key
const negativeCacheMs = 1_000; // unknown keys: bounds store lookups from garbage credentials
const negativeCacheMax = 10_000;

interface CacheEntry {
  hash: string;
  record: ApiKeyRecord;
  fetchedAt: number;
  refreshing: boolean;
}

export class KeyCache extends TenancyService {
  private readonly config: TenancyConfig;
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
    super(store, clock);
    this.config = config;
    this.log = log;
  }

  /** Forgets the key with this hash (revoked): its next use reads the store. */
  evict(hash: string): void {
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
}

function unknownKey(): TroupeError {
  return new TroupeError("unauthorized", "the API key is not valid");
}

/** The public record: the stored one without its hash and its creator. */
export function toRecord(stored: StoredApiKey): ApiKeyRecord {
  const { key_hash: _hash, created_by: _creator, ...record } = stored;
  return record;
}
