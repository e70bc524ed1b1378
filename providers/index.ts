// Entry point for the gateway and actors: builds the adapters that config
// enables, walking providers/registry.ts (a provider without a key is absent;
// simulated is always there), and the router over them.
import type { ProvidersConfig } from "../core/config.ts";
import type { UpstreamClient } from "./upstream-request.ts";
import { Catalogue } from "./catalogue.ts";
import { descriptors, type ProviderSettingsMap } from "./registry.ts";
import { Router, type RouterOptions } from "./router.ts";
import { breakerOptionsOf } from "./router-health.ts";
import type { ProviderAdapter } from "./types.ts";
import type { ProviderDeps } from "./descriptor.ts";
import { Deployments } from "./deployments.ts";

/**
 * The slice of config this module reads (`config.providers`: the router's settings from core/config.ts and each
 * descriptor's under its key); a provider whose settings are absent is off, except simulated, which is always on.
 */
export type ProvidersSettings = Pick<ProvidersConfig, "timeoutMs" | "maxAttempts"> &
  Partial<Pick<ProvidersConfig, "deploymentsFile">> &
  Pick<ProviderSettingsMap, "simulated"> &
  Partial<ProviderSettingsMap>;

export interface ProviderOverrides {
  client?: UpstreamClient;
  attemptTimeoutMs?: number;
  breaker?: RouterOptions["breaker"];
  backoff?: RouterOptions["backoff"];
  /** The router's and the deployments' clock (breakers, rpm/tpm windows). */
  now?: () => number;
  /** Told about each attempt (metrics, traces). */
  observer?: RouterOptions["observer"];
  /** An organization's own provider keys (docs/operations/byok.md). */
  ownCredentials?: RouterOptions["ownCredentials"];
}

/** What the composition root hands the router it builds: who observes its attempts, who says which organization's own key a call uses. */
export type RouterWiring = Pick<ProviderOverrides, "observer" | "ownCredentials">;
/** Builds a router with that wiring (tests point its providers at fakes with short backoffs). */
export type RouterFactory = (wiring: RouterWiring) => Router;

export function createAdapters(cfg: ProvidersSettings, client?: UpstreamClient): Map<string, ProviderAdapter> {
  const adapters = new Map<string, ProviderAdapter>();
  const settings: Partial<Record<string, unknown>> = cfg;
  for (const d of descriptors) {
    const own = settings[d.key];
    if (own === undefined) continue;
    // `own` is what d.settings made from config (ProviderSettingsMap keeps the pairing).
    for (const adapter of (d.create as (s: unknown, deps: ProviderDeps) => ProviderAdapter[])(own, { client })) {
      // An openai-compatible endpoint may not take a provider's name.
      if (adapters.has(adapter.provider)) throw new Error(`provider name ${adapter.provider} clashes with a provider (openai-compatible endpoint names must differ)`);
      adapters.set(adapter.provider, adapter);
    }
  }
  return adapters;
}

/**
 * The router over the configured adapters; with a deployments file
 * (TROUPE_DEPLOYMENTS_FILE), its providers' deployments replace their
 * one-deployment adapters (an invalid file stops the start, naming the field).
 */
export function createRouter(cfg: ProvidersSettings, overrides: ProviderOverrides = {}): Router {
  const catalogue = Catalogue.load(cfg.openaiCompatible ?? []);
  const adapters = createAdapters(cfg, overrides.client);
  const breaker = breakerOptionsOf(overrides.breaker);
  // Built before the router, over the same adapter map, so the router is whole when constructed.
  let deployments: Deployments | undefined;
  if (cfg.deploymentsFile !== undefined) {
    const settings: Readonly<Record<string, unknown>> = cfg;
    deployments = new Deployments({ path: cfg.deploymentsFile, settings, adapters, breaker, client: overrides.client, ...(overrides.now ? { now: overrides.now } : {}) });
    deployments.loadAtStart();
  }
  return new Router({
    catalogue,
    adapters,
    timeoutMs: cfg.timeoutMs,
    maxAttempts: cfg.maxAttempts,
    settingsOf: (provider) => descriptors.find((d) => d.name === provider)?.secretEnv ?? [],
    breaker,
    observer: overrides.observer,
    ownCredentials: overrides.ownCredentials,
    deployments,
    ...(overrides.attemptTimeoutMs !== undefined ? { attemptTimeoutMs: overrides.attemptTimeoutMs } : {}),
    ...(overrides.backoff ? { backoff: overrides.backoff } : {}),
    ...(overrides.now ? { now: overrides.now } : {}),
  });
}

export { Router } from "./router.ts";
export { Catalogue, priceOf } from "./catalogue.ts";
export type { ReloadOutcome } from "./deployments.ts";
export type { DeploymentReading } from "./deployment-pool.ts";
export type { RoutedEmbedRequest, CallContext, ChatCallContext } from "./router.ts";
