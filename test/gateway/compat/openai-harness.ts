// A whole Troupe (billing, budgets, rate limits, the durable usage records)
// over real sockets, its router pointed at the OpenAI, Anthropic, Gemini and
// Cohere fakes, and the official `openai` SDK, unmodified but for baseURL
// and apiKey, talking to its /openai/v1 mount.
import OpenAI from "openai";
import { loadConfig } from "../../../core/config.ts";
import { createRouter } from "../../../providers/index.ts";
import type { UsageRecord } from "../../../providers/usage.ts";
import { startAnthropicFake } from "../../fakes/anthropic-fake.ts";
import { startCohereFake } from "../../fakes/cohere-fake.ts";
import type { FakeServer } from "../../fakes/fake-server.ts";
import { startGeminiFake } from "../../fakes/gemini-fake.ts";
import { startOpenAIFake } from "../../fakes/openai-fake.ts";
import { signup, startTestTroupe, type TestTroupe } from "../../support/troupe.ts";

export interface CompatHarness {
  troupe: TestTroupe;
  /** Usage records, unless the harness writes them to the ledger (`durableUsage`). */
  usage: UsageRecord[];
  user: Awaited<ReturnType<typeof signup>>;
  fakes: { openai: FakeServer; anthropic: FakeServer; gemini: FakeServer; cohere: FakeServer; compatible: FakeServer };
  /** An SDK client for `apiKey` (default: the user's test key); no retries, so refusals surface at once. */
  client(apiKey?: string): OpenAI;
  baseURL: string;
  stop(): Promise<void>;
}

/**
 * `durableUsage`: usage goes to the ledger (budgets, GET /v1/projects/{id}/usage), as in
 * production. Otherwise records are collected in `usage`, as the /v1 route tests do: with the
 * ledger, a file making many calls sometimes sees the ledger thread die on an lmdb
 * "Attempt to reset an invalid read txn" and the usage recorder then retry its flush forever
 * after stop, keeping the test process alive (a Troupe shutdown issue, not this mount's).
 */
export async function startCompatHarness(options: { durableUsage?: boolean } = {}): Promise<CompatHarness> {
  const fakes = {
    openai: await startOpenAIFake({ apiKey: "sk-fake" }),
    anthropic: await startAnthropicFake({ apiKey: "ak-fake" }),
    gemini: await startGeminiFake({ apiKey: "g-fake" }),
    cohere: await startCohereFake({ apiKey: "co-fake" }),
    // An openai-compatible endpoint: its models are text-only (no vision), unlike the catalogue's own.
    compatible: await startOpenAIFake(),
  };
  const config = loadConfig({
    OPENAI_API_KEY: "sk-fake",
    OPENAI_BASE_URL: `${fakes.openai.url}/v1`,
    ANTHROPIC_API_KEY: "ak-fake",
    ANTHROPIC_BASE_URL: fakes.anthropic.url,
    GEMINI_API_KEY: "g-fake",
    GEMINI_BASE_URL: fakes.gemini.url,
    COHERE_API_KEY: "co-fake",
    COHERE_BASE_URL: fakes.cohere.url,
    OPENAI_COMPATIBLE_ENDPOINTS: JSON.stringify([{ name: "local", base_url: `${fakes.compatible.url}/v1`, models: ["llama-3.1-8b"] }]),
    PROVIDER_TIMEOUT_MS: "5000",
  });
  const router = createRouter(config.providers, { backoff: { initialDelayMs: 5, maxDelayMs: 20 } });
  const usage: UsageRecord[] = [];
  const troupe = await startTestTroupe({}, options.durableUsage ? { router } : { router, usage: { record: (u) => void usage.push(u) } });
  const user = await signup(troupe, "openai-compat");
  const baseURL = `http://127.0.0.1:${troupe.port}/openai/v1`;
  return {
    troupe,
    usage,
    user,
    fakes,
    baseURL,
    client: (apiKey = user.testKey) => new OpenAI({ baseURL, apiKey, maxRetries: 0 }),
    stop: async () => {
      await troupe.stop();
      for (const f of Object.values(fakes)) await f.close();
    },
  };
}

export const weatherTool = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "Weather for a city",
    parameters: { type: "object", properties: { input: { type: "string" } }, required: ["input"] },
  },
};

/** The three providers behind one SDK: a model of each. */
export const modelsByProvider = { openai: "gpt-4.1-mini", anthropic: "claude-haiku-4-5", gemini: "gemini-2.5-flash" } as const;
