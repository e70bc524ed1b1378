// A whole Troupe (billing, budgets, rate limits, the durable usage records)
// over real sockets, its router pointed at the OpenAI, Anthropic, Gemini and
// Cohere fakes, and the official `openai` SDK, unmodified but for baseURL
// and apiKey, talking to its /openai/v1 mount.
import OpenAI from "openai";
import type { UsageRecord } from "../../../providers/usage.ts";
import type { FakeServer } from "../../fakes/fake-server.ts";
import { allFakeProviders, startFakeProviders } from "../../support/fake-providers.ts";
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
  const providers = await startFakeProviders(allFakeProviders);
  const { router, fakes } = providers;
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
      await providers.close();
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
