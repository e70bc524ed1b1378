// The response cache (docs/guides/caching.md): its store, the projects'
// cache settings and their routes, and the router the text routes are
// handed — the provider router with chat, streams and embeddings looked up
// in the exact cache first (gateway/cache/caching-router.ts) and, for a
// project with semantic on, chat and streams looked up by meaning after an
// exact miss (gateway/cache/semantic-router.ts). The Responses API is
// handed it for stateless calls only (gateway/features/responses.ts); agent
// turns keep the plain router (shared services). A settings change,
// a clear and an organization's erasure are broadcast to every replica
// (gateway/cache/cache-invalidation.ts), which drops what it keeps of them.
import { cachingRouter } from "../cache/caching-router.ts";
import { CacheMetrics } from "../cache/cache-metrics.ts";
import { CacheInvalidation, type CacheChange } from "../cache/cache-invalidation.ts";
import { cacheRoutes } from "../cache/cache-routes.ts";
import { createCacheStore } from "../cache/create-cache-store.ts";
import { ProjectCacheSettingsStore, type ProjectCachePatch } from "../cache/project-cache-settings.ts";
import { ResponseCache } from "../cache/response-cache.ts";
import { semanticRouter } from "../cache/semantic-router.ts";
import { defaultSemanticModel, semanticServices } from "../cache/semantic-services.ts";
import type { CacheMetricReading } from "../../core/metrics.ts";
import type { Router } from "../../providers/router.ts";
import type { UsesCacheRequest } from "../route-runner.ts";
import type { BillingFeature } from "./billing.ts";
import type { Feature } from "./feature.ts";
import type { SharedServices } from "./shared-services.ts";

export interface CacheFeature extends Feature {
  cache: ResponseCache;
  /** The router of the cached text routes (chat, the compatible mounts, embeddings, stateless Responses calls). */
  router: Router;
  /** Every cached answer, semantic vector and the projects' cache settings of an organization, gone (its deletion). */
  eraseOrganization(orgId: string, projectIds: readonly string[]): Promise<void>;
  /** This replica's cache counts, for the /metrics exposition (read at scrape time). */
  metricReading(): CacheMetricReading;
  /** Whether the project has the cache on: synchronous while its settings copy is fresh; a read that fails says yes (the cached router decides, as before). */
  cachesFor(projectId: string): boolean | Promise<boolean>;
  /** The route runner's question (route-runner.ts UsesCacheRequest): the project caches, or its organization stored its own provider keys (the BYOK resolver reads the owner from the cache control). */
  usesCacheRequest: UsesCacheRequest;
}

export async function cacheFeature(s: SharedServices, billing: Pick<BillingFeature, "meter">): Promise<CacheFeature> {
  const store = await createCacheStore(s.config, s.clock);
  const settings = new ProjectCacheSettingsStore(s.store, s.clock);
  const metrics = new CacheMetrics();
  const cache = new ResponseCache({ store, settings, clock: s.clock, metrics, log: s.log });
  const semantic = semanticServices({
    config: s.config,
    // The plain provider router: a lookup's embedding is never itself answered from the cache.
    router: s.router,
    store: s.store,
    cacheStore: store,
    clock: s.clock,
    log: s.log,
    indexModel: defaultSemanticModel(s.config, s.router),
    meter: billing.meter,
    // The route's own payer and request id (route-runner.ts sets them): the lookup is billed as an embeddings call of the caller.
    payerOf: (request) => request.payer,
  });
  const invalidation = new CacheInvalidation(s.store, s.log);
  // Every replica, this one included (it hears its own message): its settings copies dropped, its writes in flight deleted once they land.
  // Without Elasticsearch each replica's semantic vectors are in its own embedded index: the cleared scopes are deleted there too.
  const ownVectorIndex = !s.config.vectors.elasticsearchUrl;
  const onChange = (change: CacheChange): void => {
    settings.forget(change.project_ids);
    if (change.scope === "project") cache.discardWrites(change.organization_id, new Set(change.project_ids));
    if (change.scope === "organization") cache.discardWrites(change.organization_id);
    if (ownVectorIndex && change.vectors.length > 0) {
      void semantic.cache.deleteScopesHere(change.organization_id, change.vectors).catch((error: unknown) => s.log.warn("semantic cache: this replica's vectors of a clear were not deleted", { organization_id: change.organization_id, error: String(error) }));
    }
  };
  const clearProject = async (organizationId: string, projectId: string): Promise<number> => {
    const vectors = await semantic.cache.scopesOf(organizationId, [projectId]);
    await semantic.cache.clearProject(organizationId, projectId);
    const removed = await store.clearProject(organizationId, projectId);
    await invalidation.announce({ organization_id: organizationId, project_ids: [projectId], scope: "project", vectors });
    return removed;
  };
  const updateSettings = async (organizationId: string, projectId: string, patch: ProjectCachePatch) => {
    const next = await settings.update(projectId, patch);
    await invalidation.announce({ organization_id: organizationId, project_ids: [projectId], scope: "settings" });
    return next;
  };
  const cachesFor = (projectId: string): boolean | Promise<boolean> => {
    const read = settings.settingsOf(projectId);
    return read instanceof Promise ? read.then((p) => p.enabled, () => true) : read.enabled;
  };
  return {
    cache,
    cachesFor,
    usesCacheRequest: (auth) => {
      const caches = cachesFor(auth.key.project_id);
      if (caches === true) return true;
      const own = s.ownCredentials.storedBy(auth.key.organization_id);
      return caches === false ? own : caches.then((yes) => yes || own);
    },
    metricReading: () => metrics.reading(store.heldBytes?.()),
    router: semanticRouter(cachingRouter(s.router, cache), { cache, step: semantic.step }),
    routes: cacheRoutes(s.accounts.orgs, cache, { catalogue: s.router.catalogue, clearProject, updateSettings }),
    async eraseOrganization(orgId, projectIds) {
      const vectors = await semantic.cache.scopesOf(orgId);
      await semantic.cache.deleteOrganization(orgId);
      await store.clearOrganization(orgId);
      await settings.remove(projectIds);
      await invalidation.announce({ organization_id: orgId, project_ids: [...projectIds], scope: "organization", vectors });
    },
    start: () => invalidation.start(onChange),
    stop: async () => {
      await invalidation.stop();
      await semantic.close();
      await store.close();
    },
  };
}
