// The fallback pair the router and chaos suites route between: the real
// OpenAI and Anthropic adapters, each on its fake server, closed with the test.
import type { Test } from "tap";
import { createAnthropicAdapter } from "../../providers/anthropic/index.ts";
import { createOpenAIAdapter } from "../../providers/openai/index.ts";
import { startAnthropicFake } from "../fakes/anthropic-fake.ts";
import { startOpenAIFake } from "../fakes/openai-fake.ts";

export async function startFallbackPair(t: Test) {
  const openaiFake = await startOpenAIFake();
  const anthropicFake = await startAnthropicFake();
  const openai = createOpenAIAdapter({ baseUrl: `${openaiFake.url}/v1`, apiKey: "k" });
  const anthropic = createAnthropicAdapter({ baseUrl: anthropicFake.url, apiKey: "k" });
  t.teardown(async () => {
    await openai.close?.();
    await anthropic.close?.();
    await openaiFake.close();
    await anthropicFake.close();
  });
  return { openaiFake, anthropicFake, openai, anthropic };
}
