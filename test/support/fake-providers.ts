// The provider fakes the gateway tests run against (real HTTP servers, see
// test/fakes/), the settings that point Troupe's providers at them, and how
// a Troupe builds its router over them: backoffs short (5 ms doubling to
// 20 ms) so a retried call does not slow a test down.
import { loadConfig } from "../../gateway/config.ts";
import { createRouter, type RouterFactory } from "../../providers/index.ts";
import { startAnthropicFake } from "../fakes/anthropic-fake.ts";
import { startCohereFake } from "../fakes/cohere-fake.ts";
import type { FakeServer } from "../fakes/fake-server.ts";
import { startGeminiFake } from "../fakes/gemini-fake.ts";
import { startOpenAIFake } from "../fakes/openai-fake.ts";

const starters = {
  openai: () => startOpenAIFake({ apiKey: "sk-fake" }),
  anthropic: () => startAnthropicFake({ apiKey: "ak-fake" }),
  gemini: () => startGeminiFake({ apiKey: "g-fake" }),
  cohere: () => startCohereFake({ apiKey: "co-fake" }),
  // An openai-compatible endpoint: its models are text-only (no vision), unlike the catalogue's own.
  compatible: () => startOpenAIFake(),
};

export type FakeProviderName = keyof typeof starters;

/** Every fake: the chat providers, Cohere's embeddings and an openai-compatible endpoint serving llama-3.1-8b. */
export const allFakeProviders: readonly FakeProviderName[] = ["openai", "anthropic", "gemini", "cohere", "compatible"];

const settingsFor: Record<FakeProviderName, (url: string) => Record<string, string>> = {
  openai: (url) => ({ OPENAI_API_KEY: "sk-fake", OPENAI_BASE_URL: `${url}/v1` }),
  anthropic: (url) => ({ ANTHROPIC_API_KEY: "ak-fake", ANTHROPIC_BASE_URL: url }),
  gemini: (url) => ({ GEMINI_API_KEY: "g-fake", GEMINI_BASE_URL: url }),
  cohere: (url) => ({ COHERE_API_KEY: "co-fake", COHERE_BASE_URL: url }),
  compatible: (url) => ({ OPENAI_COMPATIBLE_ENDPOINTS: JSON.stringify([{ name: "local", base_url: `${url}/v1`, models: ["llama-3.1-8b"] }]) }),
};

export interface FakeProviders<N extends FakeProviderName> {
  fakes: Record<N, FakeServer>;
  /** The settings that configure exactly these providers, at their fakes (5 s provider timeout). */
  env: Record<string, string>;
  /** StartOptions.router: each Troupe given it builds its own router over the fakes (and closes it). */
  router: RouterFactory;
  /** Closes the fakes. */
  close(): Promise<void>;
}

export async function startFakeProviders<N extends FakeProviderName>(names: readonly N[]): Promise<FakeProviders<N>> {
  const fakes = {} as Record<N, FakeServer>;
  const env: Record<string, string> = { PROVIDER_TIMEOUT_MS: "5000" };
  for (const name of names) {
    const fake = await starters[name]();
    fakes[name] = fake;
    Object.assign(env, settingsFor[name](fake.url));
  }
  const providers = loadConfig(env).providers;
  const router: RouterFactory = (wiring) => createRouter(providers, { backoff: { initialDelayMs: 5, maxDelayMs: 20 }, ...wiring });
  return {
    fakes,
    env,
    router,
    close: async () => {
      for (const fake of Object.values<FakeServer>(fakes)) await fake.close();
    },
  };
}
