// An embedded Troupe whose router points at the OpenAI, Anthropic and Gemini
// fakes (short backoffs), with real billing and usage, a project with a live
// key, and the official Anthropic SDK pointed at its /anthropic mount: only
// baseURL and apiKey are set (plus maxRetries: 0 where a test wants the
// first answer, not the SDK's retries).
import Anthropic from "@anthropic-ai/sdk";
import type { FakeServer } from "../../fakes/fake-server.ts";
import { startFakeProviders } from "../../support/fake-providers.ts";
import { projectWithLiveKey } from "../../support/billing.ts";
import { signup, startTestTroupe, type TestTroupe } from "../../support/troupe.ts";

/** One model of each provider with a fake: the point is that any of them answers the Anthropic SDK. */
export const models = { openai: "gpt-4.1-mini", anthropic: "claude-haiku-4-5", gemini: "gemini-2.5-flash" } as const;

export interface CompatHarness {
  troupe: TestTroupe;
  fakes: { openai: FakeServer; anthropic: FakeServer; gemini: FakeServer };
  session: string;
  orgId: string;
  projectId: string;
  productionEnvId: string;
  liveKey: string;
  testKey: string;
  /** The official SDK against this Troupe's /anthropic mount. */
  client(apiKey?: string, options?: { maxRetries?: number }): Anthropic;
  /** Provider requests the fakes received so far. */
  providerCalls(): number;
  stop(): Promise<void>;
}

export async function startCompatHarness(options: { env?: Record<string, string> } = {}): Promise<CompatHarness> {
  const providers = await startFakeProviders(["openai", "anthropic", "gemini"]);
  const { router, fakes, env } = providers;
  const troupe = await startTestTroupe({ ...env, ...options.env }, { router });
  const user = await signup(troupe, "anthropic-sdk");
  const project = await projectWithLiveKey(troupe, user.token, user.orgId, "anthropic-sdk");
  return {
    troupe,
    fakes,
    session: user.token,
    orgId: user.orgId,
    projectId: project.projectId,
    productionEnvId: project.productionEnvId,
    liveKey: project.liveKey,
    testKey: project.testKey,
    client: (apiKey = project.liveKey, options = {}) => new Anthropic({ baseURL: `${troupe.url}/anthropic`, apiKey, ...options }),
    providerCalls: () => fakes.openai.requests.length + fakes.anthropic.requests.length + fakes.gemini.requests.length,
    stop: async () => {
      await troupe.stop();
      await providers.close();
    },
  };
}
