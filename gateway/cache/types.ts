// The response cache's shared vocabulary (docs/guides/caching.md): what a
// stored answer looks like, where it belongs (organization, project,
// environment), and the store interface the exact cache (this folder) and the
// semantic cache (semantic*.ts) both use. Two implementations: lmdb
// (embedded-cache-store.ts) and Redis (redis-cache-store.ts).
import type { ChatResult, EmbedResult } from "../../providers/types.ts";

/** Whose an entry is: every read checks it against the stored entry's own, so a key collision can never leak across tenants. */
export interface CacheScope {
  organization_id: string;
  project_id: string;
  environment_id: string;
}

/** A stored answer: a complete, successful chat result or an embedding result. */
export type CachedAnswer = { kind: "chat"; result: ChatResult } | { kind: "embedding"; result: EmbedResult };

export interface CacheEntry {
  scope: CacheScope;
  answer: CachedAnswer;
  /** When it was stored (ms since the epoch, the injected clock): the `troupe-cache-age` of a hit. */
  stored_ms: number;
  /** When it stops being served (ms since the epoch). */
  expires_ms: number;
}

export interface CacheStore {
  /** The live entry under `key` of this scope; undefined when absent, expired, or stored for another scope. Marks it recently used. */
  get(scope: CacheScope, key: string): Promise<CacheEntry | undefined>;
  /**
   * Stores `entry` under `key` until `entry.expires_ms`; evicts the
   * organization's least recently used entries past its byte quota. Resolves
   * to the bytes stored (compressed); an entry larger than the per-entry
   * limit is not stored (resolves 0).
   */
  put(key: string, entry: CacheEntry): Promise<number>;
  delete(scope: CacheScope, key: string): Promise<void>;
  /** Removes every entry of a project (its "clear cache" action); resolves to the number removed. */
  clearProject(organizationId: string, projectId: string): Promise<number>;
  /** Removes every entry of an organization (its deletion). */
  clearOrganization(organizationId: string): Promise<void>;
  /** Bytes the organization's entries take as stored (compressed), for the quota and /metrics. */
  bytesOf(organizationId: string): Promise<number>;
  /** Bytes held for every organization, when the store knows it without a round trip (lmdb's in-memory listing; Redis does not say). */
  heldBytes?(): number;
  close(): Promise<void>;
}

/** Per-request control: the `troupe-cache` request header. */
export type CacheMode = "use" | "refresh" | "bypass";
/** What happened, in the `troupe-cache` response header. */
export type CacheOutcome = "hit" | "miss" | "refresh" | "bypass";

/** A project's cache settings (GET/PATCH /v1/projects/{id}/cache); `semantic*` are read by the semantic cache. */
export interface ProjectCacheSettings {
  enabled: boolean;
  /** TTL of an entry when the request names none (seconds). */
  default_ttl_seconds: number;
  /** The most a `troupe-cache-ttl` header may ask for (seconds). */
  max_ttl_seconds: number;
  semantic_enabled: boolean;
  /** Cosine similarity a semantic hit needs (0..1). */
  semantic_threshold: number;
  /** Catalogue id of the embedding model of the semantic lookups; null: the deployment's default (docs/guides/caching.md). */
  semantic_embedding_model: string | null;
}

export const defaultProjectCacheSettings: Readonly<ProjectCacheSettings> = Object.freeze({
  enabled: false,
  // 1 h default, 7 days at most: long enough to matter for repeated prompts, short enough that a model update shows within a day's run.
  default_ttl_seconds: 3600,
  max_ttl_seconds: 7 * 24 * 3600,
  semantic_enabled: false,
  semantic_threshold: 0.95,
  semantic_embedding_model: null,
});
