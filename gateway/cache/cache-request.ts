// A request's cache control, from its headers to the router decorator
// (caching-router.ts) through the request's async context — the way the
// key's model allowlist reaches the router (providers/router-allowlist.ts):
// the route runner sets it once around the handler, so every mount that
// calls the router is covered without passing anything along. It does so
// only when something reads it (the project caches, or its organization
// stored provider keys): an AsyncLocalStorage run costs every promise of the
// process from then on (route-runner.ts, docs/decisions.md). The outcome
// goes back the same way: written into the response's headers before the
// first byte (JSON answers and SSE heads both send `state.headers`).
import { AsyncLocalStorage } from "node:async_hooks";
import { invalidRequest } from "../../core/errors.ts";
import type { UsageContext } from "../../providers/usage.ts";
import type { ApiKeyRecord } from "../../tenancy/types.ts";
import type { ResponseState } from "../http-io.ts";
import { payerOf } from "../usage-context.ts";
import type { KeyOwner } from "./cache-key.ts";
import type { CacheMode, CacheOutcome } from "./types.ts";

export const cacheModeHeader = "troupe-cache";
export const cacheTtlHeader = "troupe-cache-ttl";
export const cacheAgeHeader = "troupe-cache-age";
/** How a hit matched: `exact` (this key) or `semantic` (semantic-step.ts). */
export const cacheMatchHeader = "troupe-cache-match";

export interface CacheRequest {
  owner: KeyOwner;
  /**
   * Who pays for the request, with its id: the usage context the route bills
   * its own call to (usage-context.ts). Calls the cache makes on the
   * request's behalf — the semantic lookup's embedding — are billed to it.
   */
  payer: UsageContext;
  mode: CacheMode;
  /** The TTL the request asked for (seconds); bounded by the project's maximum when used. */
  ttlSeconds: number | undefined;
  /** Where the outcome headers go. */
  state: ResponseState;
  /** Set once per request, by the first cached call (a route makes one). */
  outcome: CacheOutcome | undefined;
}

const modes: ReadonlySet<string> = new Set<CacheMode>(["use", "refresh", "bypass"]);
// 1 year: far above any project's maximum; bounds the number before it is used.
const maxTtlHeaderSeconds = 365 * 24 * 3600;

/** The cache control of an API-key request, or a 400 naming the header. No header: `use` (the project's setting decides whether anything is cached). */
export function cacheRequestOf(key: ApiKeyRecord, headers: Readonly<Record<string, string>>, state: ResponseState, requestId: string): CacheRequest {
  const modeText = headers[cacheModeHeader];
  const mode = modeText === undefined ? "use" : modeText.trim().toLowerCase();
  if (!modes.has(mode)) throw invalidRequest([{ path: `header.${cacheModeHeader}`, message: "must be use, refresh or bypass" }]);
  const ttlText = headers[cacheTtlHeader];
  let ttlSeconds: number | undefined;
  if (ttlText !== undefined) {
    ttlSeconds = /^[0-9]{1,9}$/.test(ttlText.trim()) ? Number(ttlText.trim()) : NaN;
    if (!(ttlSeconds >= 1 && ttlSeconds <= maxTtlHeaderSeconds)) throw invalidRequest([{ path: `header.${cacheTtlHeader}`, message: `must be a whole number of seconds from 1 to ${maxTtlHeaderSeconds}` }]);
  }
  return {
    owner: { organization_id: key.organization_id, project_id: key.project_id, environment_id: key.environment_id, live: key.live },
    payer: { ...payerOf(key), request_id: requestId },
    mode: mode as CacheMode,
    ttlSeconds,
    state,
    outcome: undefined,
  };
}

const storage = new AsyncLocalStorage<CacheRequest>();

/** Runs `fn` (a request's handler) with `request` as the cache control every router call inside it applies. */
export function withCacheRequest<T>(request: CacheRequest, fn: () => T): T {
  return storage.run(request, fn);
}

/** The cache control of the request being handled; undefined outside a request (agent turns, background work). */
export function currentCacheRequest(): CacheRequest | undefined {
  return storage.getStore();
}

/**
 * Says what happened, in the answer's headers (once: a second cached call in
 * one request keeps the first's). An exact hit names its match here; a
 * semantic one adds its own headers after (announceSemanticHit).
 */
export function announce(request: CacheRequest, outcome: CacheOutcome, ageSeconds?: number, match?: "exact"): void {
  if (request.outcome) return;
  request.outcome = outcome;
  const added: [string, string][] = [[cacheModeHeader, outcome]];
  if (ageSeconds !== undefined) added.push([cacheAgeHeader, String(ageSeconds)]);
  if (match !== undefined) added.push([cacheMatchHeader, match]);
  // A fresh array: the rate-limit headers' array may be shared.
  request.state.headers = [...(request.state.headers ?? []), ...added];
}

/** True when the request's answer came from the cache: billed at the cache price (route-billing.ts). */
export function servedFromCache(): boolean {
  return storage.getStore()?.outcome === "hit";
}
