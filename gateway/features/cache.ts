// The response cache (docs/guides/caching.md): its store, the projects'
// cache settings and their routes, and the router the text routes are
// handed — the provider router with chat, streams and embeddings looked up
// in the exact cache first (gateway/cache/caching-router.ts) and, for a
// project with semantic on, chat and streams looked up by meaning after an
// exact miss (gateway/cache/semantic-router.ts). Agent turns and the
// Responses API keep the plain router (shared services).
import { cachingRouter } from "../cache/caching-router.ts";
import { CacheMetrics } from "../cache/cache-metrics.ts";
import { cacheRoutes } from "../cache/cache-routes.ts";
import { createCacheStore } from "../cache/create-cache-store.ts";
import { ProjectCacheSettingsStore } from "../cache/project-cache-settings.ts";
import { ResponseCache } from "../cache/response-cache.ts";
import { semanticRouter } from "../cache/semantic-router.ts";
import { defaultSemanticModel, semanticServices } from "../cache/semantic-services.ts";
import type { Router } from "../../providers/router.ts";
import type { BillingFeature } from "./billing.ts";
import type { Feature } from "./feature.ts";
import type { SharedServices } from "./shared-services.ts";

export interface CacheFeature extends Feature {
  cache: ResponseCache;
  /** The router of the cached text routes (chat, the compatible mounts, embeddings). */
  router: Router;
  /** Every cached answer, semantic vector and the projects' cache settings of an organization, gone (its deletion). */
  eraseOrganization(orgId: string, projectIds: readonly string[]): Promise<void>;
}

export async function cacheFeature(s: SharedServices, billing: Pick<BillingFeature, "meter">): Promise<CacheFeature> {
  const store = await createCacheStore(s.config, s.clock);
  const settings = new ProjectCacheSettingsStore(s.store, s.clock);
  const metrics = new CacheMetrics();
  const cache = new ResponseCache({ store, settings, clock: s.clock, metrics, log: s.log });
  s.metrics.addSources({ cache: () => metrics.reading(store.heldBytes?.()) });
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
  const clearProject = async (organizationId: string, projectId: string): Promise<number> => {
    await semantic.cache.clearProject(organizationId, projectId);
    return store.clearProject(organizationId, projectId);
  };
  return {
    cache,
    router: semanticRouter(cachingRouter(s.router, cache), { cache, step: semantic.step }),
    routes: cacheRoutes(s.accounts.orgs, cache, { catalogue: s.router.catalogue, clearProject }),
    async eraseOrganization(orgId, projectIds) {
      await semantic.cache.deleteOrganization(orgId);
      await store.clearOrganization(orgId);
      await settings.remove(projectIds);
    },
    stop: async () => {
      await semantic.close();
      await store.close();
    },
  };
}
