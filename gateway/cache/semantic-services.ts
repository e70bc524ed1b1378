// The semantic cache built from the shared services, for the cache feature
// (gateway/features/cache.ts) to hand its router decorator: the cache over
// its own vector indexes (semantic-index.ts), the step's dependencies, and
// what the feature calls on a project's clear, an organization's deletion
// and at stop. Wired, the feature's router is
// `semanticRouter(cachingRouter(router, cache), { cache, step })`, its
// clear and erasure also call `cache.clearProject` / `deleteOrganization`,
// and its stop `close()`.
import type { Clock } from "../../core/clock.ts";
import type { Config } from "../../core/config.ts";
import type { DataStore } from "../../core/data-store.ts";
import type { Logger } from "../../core/log.ts";
import type { Router } from "../../providers/router.ts";
import { preferredIndexModel } from "../index-model.ts";
import type { UsageContext, UsageMeter } from "../../providers/usage.ts";
import { SemanticCache } from "./semantic.ts";
import { routerSemanticEmbedder, semanticIndexOpener } from "./semantic-index.ts";
import type { SemanticCallRequest, SemanticStepDeps } from "./semantic-step.ts";
import type { CacheStore } from "./types.ts";

/**
 * The call number of a lookup's embedding record: its usage key is the
 * request id and this number, the route's own record's is the request id
 * alone, so the two are billed apart and a retried delivery of either is
 * still counted once.
 */
export const SEMANTIC_LOOKUP_CALL = 0;

export interface SemanticServicesDeps {
  config: Config;
  router: Router;
  /** The data store (the registry of which indexes hold an organization's vectors). */
  store: DataStore;
  /** The exact cache's store: a hit is served from it. */
  cacheStore: CacheStore;
  clock: Clock;
  log: Logger;
  /** The organization vector index's model: the embedding model of a project that names none. */
  indexModel: string;
  meter: UsageMeter;
  /** Who pays for the request a lookup is made in (undefined: not billed, as session calls are not). */
  payerOf: (request: SemanticCallRequest) => UsageContext | undefined;
}

export interface SemanticServices {
  cache: SemanticCache;
  step: SemanticStepDeps;
  close(): Promise<void>;
}

export function semanticServices(deps: SemanticServicesDeps): SemanticServices {
  const log = deps.log.child({ component: "semantic-cache" });
  const openIndex = semanticIndexOpener(deps.config, deps.router, log);
  const cache = new SemanticCache({ store: deps.store, embed: routerSemanticEmbedder(deps.router), openIndex, clock: deps.clock, logger: log });
  const bill: SemanticStepDeps["bill"] = (request, usage) => {
    const payer = deps.payerOf(request);
    deps.meter.record(payer && { ...payer, call: SEMANTIC_LOOKUP_CALL }, "embeddings", usage);
  };
  return {
    cache,
    step: { semantic: cache, store: deps.cacheStore, defaultModel: deps.indexModel, bill, log },
    close: () => openIndex.closeAll(),
  };
}

/**
 * The embedding model of a project that names none: EMBEDDING_INDEX_MODEL
 * when set, else the best configured one in the vector index's preference
 * order (gateway/index-model.ts; the simulated model only when no real
 * provider is). The cache's indexes are its own, so an organization index
 * built earlier with another model does not bind it.
 */
export function defaultSemanticModel(config: Config, router: Router): string {
  return config.vectors.indexModel ?? preferredIndexModel(router);
}
