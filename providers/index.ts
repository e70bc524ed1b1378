// Entry point for the gateway and actors: builds the adapters that config
// enables (a provider without a key is absent; simulated is always there)
// and the router over them.
import { defaultSimulatedVideoDir, type ProvidersConfig } from "../core/config.ts";
import type { UpstreamClient } from "./upstream-request.ts";
import { createAnthropicAdapter } from "./anthropic/index.ts";
import { Catalogue } from "./catalogue.ts";
import { createCohereAdapter } from "./cohere/index.ts";
import { createGeminiAdapter } from "./gemini/index.ts";
import { createCompatibleAdapter } from "./openai-compatible/index.ts";
import { createOpenAIAdapter } from "./openai/index.ts";
import { Router, type RouterOptions } from "./router.ts";
import { createSimulatedAdapter } from "./simulated/index.ts";
import { createElevenLabsAdapter } from "./elevenlabs/index.ts";
import { createStabilityAdapter } from "./stability/index.ts";
import { createBflAdapter } from "./bfl/index.ts";
import { createRunwayAdapter } from "./runway/index.ts";
import { createLumaAdapter } from "./luma/index.ts";
import type { ProviderAdapter } from "./types.ts";

/** The slice of config this module reads (core/config.ts `providers`). */
export type ProvidersSettings = Pick<
  ProvidersConfig,
  "openai" | "anthropic" | "gemini" | "cohere" | "openaiCompatible" | "timeoutMs" | "maxAttempts" | "simulated"
> &
  Partial<Pick<ProvidersConfig, "elevenlabs" | "stability" | "bfl" | "runway" | "luma">>;

export interface ProviderOverrides {
  client?: UpstreamClient;
  attemptTimeoutMs?: number;
  breaker?: RouterOptions["breaker"];
  backoff?: RouterOptions["backoff"];
}

export function createAdapters(cfg: ProvidersSettings, client?: UpstreamClient): Map<string, ProviderAdapter> {
  const d = client ? { client } : {};
  const adapters = new Map<string, ProviderAdapter>();
  // Simulated video is always there too; settings built by hand (tests, benches) get clips at once.
  adapters.set("simulated", createSimulatedAdapter({ ...cfg.simulated, video: cfg.simulated.video ?? { delayMs: 0, cacheDir: defaultSimulatedVideoDir } }));
  if (cfg.openai.apiKey) adapters.set("openai", createOpenAIAdapter({ baseUrl: cfg.openai.baseUrl, apiKey: cfg.openai.apiKey, ...d }));
  if (cfg.anthropic.apiKey) {
    adapters.set("anthropic", createAnthropicAdapter({ baseUrl: cfg.anthropic.baseUrl, apiKey: cfg.anthropic.apiKey, ...d }));
  }
  if (cfg.gemini.apiKey) adapters.set("gemini", createGeminiAdapter({ baseUrl: cfg.gemini.baseUrl, apiKey: cfg.gemini.apiKey, ...d }));
  if (cfg.cohere.apiKey) adapters.set("cohere", createCohereAdapter({ baseUrl: cfg.cohere.baseUrl, apiKey: cfg.cohere.apiKey, ...d }));
  if (cfg.elevenlabs?.apiKey) adapters.set("elevenlabs", createElevenLabsAdapter({ baseUrl: cfg.elevenlabs.baseUrl, apiKey: cfg.elevenlabs.apiKey, ...d }));
  if (cfg.stability?.apiKey) adapters.set("stability", createStabilityAdapter({ baseUrl: cfg.stability.baseUrl, apiKey: cfg.stability.apiKey, ...d }));
  if (cfg.bfl?.apiKey) adapters.set("bfl", createBflAdapter({ baseUrl: cfg.bfl.baseUrl, apiKey: cfg.bfl.apiKey, pollIntervalMs: cfg.bfl.pollIntervalMs, ...d }));
  if (cfg.runway?.apiKey) adapters.set("runway", createRunwayAdapter({ baseUrl: cfg.runway.baseUrl, apiKey: cfg.runway.apiKey, pollIntervalMs: cfg.runway.pollIntervalMs, ...d }));
  if (cfg.luma?.apiKey) adapters.set("luma", createLumaAdapter({ baseUrl: cfg.luma.baseUrl, apiKey: cfg.luma.apiKey, pollIntervalMs: cfg.luma.pollIntervalMs, ...d }));
  for (const ep of cfg.openaiCompatible) {
    if (adapters.has(ep.name)) throw new Error(`openai-compatible endpoint name ${ep.name} clashes with a provider`);
    adapters.set(ep.name, createCompatibleAdapter(ep, client));
  }
  return adapters;
}

export function createRouter(cfg: ProvidersSettings, overrides: ProviderOverrides = {}): Router {
  const catalogue = Catalogue.load(cfg.openaiCompatible);
  return new Router({
    catalogue,
    adapters: createAdapters(cfg, overrides.client),
    timeoutMs: cfg.timeoutMs,
    maxAttempts: cfg.maxAttempts,
    ...(overrides.attemptTimeoutMs !== undefined ? { attemptTimeoutMs: overrides.attemptTimeoutMs } : {}),
    ...(overrides.breaker ? { breaker: overrides.breaker } : {}),
    ...(overrides.backoff ? { backoff: overrides.backoff } : {}),
  });
}

export { Router } from "./router.ts";
export { Catalogue, priceOf } from "./catalogue.ts";
export type { RoutedEmbedRequest, CallContext, ChatCallContext } from "./router.ts";
