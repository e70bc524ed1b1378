// The OpenAI Agents SDK for JS (@openai/agents, pinned) in chat-completions
// mode against an embedded Troupe's /openai/v1 and the provider fakes: a run
// with a function tool, the SDK's default model settings. The defaults the
// SDK gives its own (gpt-5 family) default model — reasoning effort and
// verbosity, refused as unknown fields before — are accepted on any model:
// reasoning_effort translated, verbosity named in troupe-ignored-params.
import { Agent, getDefaultModelSettings, run, setTracingDisabled, tool } from "@openai/agents";
import { OpenAIChatCompletionsModel } from "@openai/agents-openai";
import t from "tap";
import { z } from "zod";
import { startCompatHarness } from "./openai-harness.ts";

t.setTimeout(90_000);
// No traces to api.openai.com: nothing leaves the machine but calls to the local gateway.
setTracingDisabled(true);
const h = await startCompatHarness();
t.teardown(() => h.stop());

const weather = tool({
  name: "get_weather",
  description: "Weather for a city",
  parameters: z.object({ input: z.string() }),
  execute: async ({ input }) => JSON.stringify({ city: input, temp: 21 }),
});

for (const model of ["gpt-4.1-mini", "gemini-2.5-flash"]) {
  t.test(`${model}: a run with a function tool, default model settings`, async (t) => {
    const agent = new Agent({ name: "weather", instructions: "use tools", tools: [weather], model: new OpenAIChatCompletionsModel(h.client(), model) });
    const result = await run(agent, "weather in Paris?");
    t.type(result.finalOutput, "string");
    t.ok(String(result.finalOutput).length > 0, "a final answer after the tool");
    const called = result.newItems.some((item) => item.type === "tool_call_output_item");
    t.ok(called, "the tool ran and its output went back");
  });
}

t.test("the SDK's gpt-5 default settings (reasoning effort, verbosity) are accepted on a model of the catalogue", async (t) => {
  const settings = getDefaultModelSettings("gpt-5.4-mini");
  t.ok(settings.reasoning?.effort !== undefined && settings.text?.verbosity !== undefined, "the SDK's defaults set both");
  const agent = new Agent({ name: "weather", tools: [weather], modelSettings: settings, model: new OpenAIChatCompletionsModel(h.client(), "gemini-2.5-flash") });
  const result = await run(agent, "weather in Paris?");
  t.type(result.finalOutput, "string");
  const sent = h.fakes.gemini.requests.at(-1)?.body as { generationConfig?: { thinkingConfig?: unknown } };
  t.same(sent.generationConfig?.thinkingConfig, { thinkingBudget: 0 }, "reasoning effort none reached Gemini as thinking off");
});
