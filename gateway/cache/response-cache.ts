// The exact cache's decisions for one router call (docs/guides/caching.md):
// whether the request's project caches at all, what its `troupe-cache`
// header asks, the lookup, and storing a finished answer. The router
// decorator (caching-router.ts) calls it; nothing here knows a mount.
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../core/log.ts";
import type { CacheMetrics } from "./cache-metrics.ts";
import type { KeyOwner } from "./cache-key.ts";
import { currentCacheRequest, type CacheRequest } from "./cache-request.ts";
import type { ProjectCacheSettingsStore } from "./project-cache-settings.ts";
import type { CacheEntry, CachedAnswer, CacheScope, CacheStore } from "./types.ts";

export interface ResponseCacheDeps {
  store: CacheStore;
  settings: ProjectCacheSettingsStore;
  clock: Clock;
  metrics: CacheMetrics;
  log: Logger;
}

/** One call's cache decision: its key, the request it belongs to, how long a stored answer lives, and the entry found (mode `use` only). */
export interface CachePlan {
  key: string;
  request: CacheRequest;
  ttlMs: number;
  found: CacheEntry | undefined;
}

export class ResponseCache {
  readonly store: CacheStore;
  readonly settings: ProjectCacheSettingsStore;
  private readonly clock: Clock;
  readonly metrics: CacheMetrics;
  private readonly log: Logger;
  /**
   * Answers being written, by key: an identical request arriving meanwhile
   * waits for the write and hits, instead of calling the provider again. A
   * clear or an organization's deletion (on any replica) deletes the ones
   * in flight once they land (`discardWrites`): none outlives it.
   */
  private readonly writing = new Map<string, { write: Promise<unknown>; scope: CacheScope }>();

  constructor(deps: ResponseCacheDeps) {
    this.store = deps.store;
    this.settings = deps.settings;
    this.clock = deps.clock;
    this.metrics = deps.metrics;
    this.log = deps.log;
  }

  /**
   * The plan for a call made while handling a request; undefined when the
   * cache has no say: outside a request (agent turns, background work), or
   * when the request's project has the cache off.
   */
  async plan(keyOf: (owner: KeyOwner) => string): Promise<CachePlan | undefined> {
    const request = currentCacheRequest();
    if (!request) return undefined;
    const read = this.settings.settingsOf(request.owner.project_id);
    const settings = read instanceof Promise ? await read : read;
    if (!settings.enabled) return undefined;
    const ttlSeconds = Math.min(request.ttlSeconds ?? settings.default_ttl_seconds, settings.max_ttl_seconds);
    const key = keyOf(request.owner);
    let found: CacheEntry | undefined;
    if (request.mode === "use") {
      const written = this.writing.get(key);
      if (written) await written.write;
      // A store that cannot be read is a miss: the cache never fails a call.
      found = await this.store.get(request.owner, key).catch((error: unknown) => {
        this.log.warn("cache read failed", { error: String(error) });
        return undefined;
      });
    }
    return { key, request, ttlMs: ttlSeconds * 1000, found };
  }

  /** Whole seconds since the entry was stored (the `troupe-cache-age` header). */
  ageSeconds(entry: CacheEntry): number {
    return Math.max(0, Math.floor((this.clock.now() - entry.stored_ms) / 1000));
  }

  /** Stores a finished answer off the answer's path; a failure is logged, never the caller's. */
  keep(plan: CachePlan, answer: CachedAnswer): void {
    if (plan.request.mode === "bypass") return;
    const now = this.clock.now();
    const entry: CacheEntry = {
      scope: { organization_id: plan.request.owner.organization_id, project_id: plan.request.owner.project_id, environment_id: plan.request.owner.environment_id },
      answer,
      stored_ms: now,
      expires_ms: now + plan.ttlMs,
    };
    const write = this.store.put(plan.key, entry).then(
      (stored) => {
        if (stored > 0) this.metrics.stored(stored);
      },
      (error: unknown) => this.log.warn("cache write failed", { error: String(error) }),
    );
    this.writing.set(plan.key, { write, scope: entry.scope });
    void write.then(() => {
      if (this.writing.get(plan.key)?.write === write) this.writing.delete(plan.key);
    });
  }

  /**
   * The answers of the organization (of `projectIds` only, when given) still
   * being written are deleted once written: a clear made meanwhile keeps
   * none. The delete takes the write's place in `writing`, so an identical
   * request waiting there reads after the delete, whatever order the store
   * runs the two in.
   */
  discardWrites(organizationId: string, projectIds?: ReadonlySet<string>): void {
    for (const [key, { write, scope }] of this.writing) {
      if (scope.organization_id !== organizationId || (projectIds && !projectIds.has(scope.project_id))) continue;
      const discarded: Promise<void> = write
        .then(() => this.store.delete(scope, key))
        .catch((error: unknown) => this.log.warn("cache delete of a discarded write failed", { error: String(error) }))
        .then(() => {
          if (this.writing.get(key)?.write === discarded) this.writing.delete(key);
        });
      this.writing.set(key, { write: discarded, scope });
    }
  }
}
