// Entry point for the gateway and actors: builds the adapters that config
// enables, walking providers/registry.ts (a provider without a key is absent;
// simulated is always there), and the router over them.
import type { ProvidersConfig } from "../core/config.ts";
import type { UpstreamClient } from "./upstream-request.ts";
import { Catalogue } from "./catalogue.ts";
import { descriptors, type ProviderSettingsMap } from "./registry.ts";
import { Router, type RouterOptions } from "./router.ts";
import type { ProviderAdapter } from "./types.ts";
import type { ProviderDeps } from "./descriptor.ts";

/**
 * The slice of config this module reads (`config.providers`: the router's settings from core/config.ts and each
 * descriptor's under its key); a provider whose settings are absent is off, except simulated, which is always on.
 */
export type ProvidersSettings = Pick<ProvidersConfig, "timeoutMs" | "maxAttempts"> & Pick<ProviderSettingsMap, "simulated"> & Partial<ProviderSettingsMap>;

export interface ProviderOverrides {
  client?: UpstreamClient;
  attemptTimeoutMs?: number;
  breaker?: RouterOptions["breaker"];
  backoff?: RouterOptions["backoff"];
}

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

export function createRouter(cfg: ProvidersSettings, overrides: ProviderOverrides = {}): Router {
  const catalogue = Catalogue.load(cfg.openaiCompatible ?? []);
  return new Router({
    catalogue,
    adapters: createAdapters(cfg, overrides.client),
    timeoutMs: cfg.timeoutMs,
    maxAttempts: cfg.maxAttempts,
    settingsOf: (provider) => descriptors.find((d) => d.name === provider)?.secretEnv ?? [],
    ...(overrides.attemptTimeoutMs !== undefined ? { attemptTimeoutMs: overrides.attemptTimeoutMs } : {}),
    ...(overrides.breaker ? { breaker: overrides.breaker } : {}),
    ...(overrides.backoff ? { backoff: overrides.backoff } : {}),
  });
}

export { Router } from "./router.ts";
export { Catalogue, priceOf } from "./catalogue.ts";
export type { RoutedEmbedRequest, CallContext, ChatCallContext } from "./router.ts";
