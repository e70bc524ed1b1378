// Agent clients in their default mode, which is the Responses API, against
// an embedded Troupe's /openai/v1 over real sockets (the provider fakes and
// the simulated provider behind it): `@openai/agents` (JS: a run, a
// function tool round trip, a streamed run) and the AI SDK's first-party
// `@ai-sdk/openai` provider, `openai(model)` (generateText, streamText
// with a tool over two steps) — through an OpenAI, an Anthropic and a
// Gemini model, and the simulated one.
import { createOpenAI } from "@ai-sdk/openai";
import { Agent, OpenAIProvider, Runner, tool as agentTool } from "@openai/agents";
import { generateText, stepCountIs, streamText, tool } from "ai";
import OpenAI from "openai";
import t from "tap";
import { z } from "zod";
import { modelsByProvider, startCompatHarness } from "./openai-harness.ts";

// No tracing export to OpenAI's servers: the machine has no internet and a client must not try.
process.env.OPENAI_AGENTS_DISABLE_TRACING = "1";
t.setTimeout(120_000);
const h = await startCompatHarness();
t.teardown(() => h.stop());

const models = { ...modelsByProvider, simulated: "simulated-chat" } as const;
const runner = new Runner({ modelProvider: new OpenAIProvider({ openAIClient: new OpenAI({ baseURL: h.baseURL, apiKey: h.user.testKey, maxRetries: 0 }) }), tracingDisabled: true });
const aiSdk = createOpenAI({ baseURL: h.baseURL, apiKey: h.user.testKey });

/** The Responses API calls Troupe served since `since` (requests the fakes got don't say which door they came through; the usage records do). */
const responsesCalls = (since: number) => h.usage.slice(since).filter((u) => u.category === "chat").length;

for (const [provider, model] of Object.entries(models)) {
  const simulated = provider === "simulated";

  t.test(`${provider} (${model}): @openai/agents run`, async (t) => {
    const agent = new Agent({ name: "echo", instructions: "Answer briefly.", model });
    const result = await runner.run(agent, "hello agents");
    if (simulated) t.ok(String(result.finalOutput).length > 0);
    else t.equal(result.finalOutput, "Echo: hello agents");
    t.match(result.rawResponses[0]?.responseId, /^resp_/, "a Responses API response");
  });

  t.test(`${provider} (${model}): @openai/agents function tool round trip`, async (t) => {
    const seen: string[] = [];
    const weather = agentTool({
      name: "get_weather",
      description: "Weather for a city",
      parameters: z.object({ input: z.string() }),
      execute: async ({ input }) => {
        seen.push(input);
        return "sunny, 21C";
      },
    });
    const agent = new Agent({ name: "weather", instructions: "Use the tool.", model, tools: [weather], modelSettings: { toolChoice: simulated ? "required" : "auto" }, resetToolChoice: true });
    const since = h.usage.length;
    const result = await runner.run(agent, "Weather in Paris?");
    t.equal(seen.length, 1, "the SDK ran the tool once");
    if (!simulated) {
      t.equal(seen[0], "Weather in Paris?");
      t.match(String(result.finalOutput), /^Tool said: .*sunny, 21C/);
    } else t.ok(String(result.finalOutput).length > 0);
    t.equal(responsesCalls(since), 2, "two model calls: the call, then the answer");
  });

  t.test(`${provider} (${model}): @openai/agents streamed run`, async (t) => {
    const agent = new Agent({ name: "streamer", instructions: "Answer briefly.", model });
    const result = await runner.run(agent, "hello stream", { stream: true });
    const pieces: string[] = [];
    for await (const piece of result.toTextStream()) pieces.push(piece);
    await result.completed;
    t.ok(pieces.length >= 1, "text arrived as it streamed");
    t.equal(pieces.join(""), String(result.finalOutput));
    if (!simulated) t.equal(result.finalOutput, "Echo: hello stream");
  });

  t.test(`${provider} (${model}): @ai-sdk/openai openai(model) generateText`, async (t) => {
    const r = await generateText({ model: aiSdk(model), prompt: "hello there", maxRetries: 0 });
    if (simulated) t.ok(r.text.length > 0);
    else t.equal(r.text, "Echo: hello there");
    t.equal(r.finishReason, "stop");
    t.ok((r.usage.inputTokens ?? 0) > 0 && (r.usage.outputTokens ?? 0) > 0, "usage read from the response");
    t.match(r.response.id, /^resp_/, "the Responses API answered");
  });

  t.test(`${provider} (${model}): @ai-sdk/openai streamText with a tool, two steps`, async (t) => {
    const inputs: unknown[] = [];
    const result = streamText({
      model: aiSdk(model),
      prompt: "Weather in Paris?",
      maxRetries: 0,
      ...(simulated ? { toolChoice: "required" as const, prepareStep: ({ stepNumber }: { stepNumber: number }) => (stepNumber > 0 ? { toolChoice: "auto" as const } : {}) } : {}),
      tools: {
        get_weather: tool({
          description: "Weather for a city",
          inputSchema: z.object({ input: z.string() }),
          execute: async (input) => {
            inputs.push(input);
            return "sunny";
          },
        }),
      },
      stopWhen: stepCountIs(2),
    });
    const deltas: string[] = [];
    for await (const d of result.textStream) deltas.push(d);
    const steps = await result.steps;
    t.equal(steps.length, 2, "a tool step, then the answer");
    t.equal(inputs.length, 1, "the SDK ran the tool");
    if (!simulated) {
      t.same(inputs[0], { input: "Weather in Paris?" });
      // The Anthropic fake says "Let me check." before its tool call: the first step's text comes first.
      t.match(deltas.join(""), /Tool said: .*sunny/);
    } else t.ok(deltas.join("").length > 0);
  });
}
