// The Vercel AI SDK (`ai` with `@ai-sdk/openai-compatible`), pointed at an
// embedded Troupe's /openai/v1 over real sockets with the provider fakes
// behind it: generateText, streamText with a tool the SDK runs itself (its
// streamed tool-call deltas are parsed by the SDK, then the result goes back
// for a second step), each through an OpenAI, an Anthropic and a Gemini
// model; and embed.
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { embed, generateText, stepCountIs, streamText, tool } from "ai";
import t from "tap";
import { z } from "zod";
import { modelsByProvider, startCompatHarness } from "./openai-harness.ts";

t.setTimeout(90_000);
const h = await startCompatHarness();
t.teardown(() => h.stop());
const troupe = createOpenAICompatible({ name: "troupe", baseURL: h.baseURL, apiKey: h.user.testKey, includeUsage: true });

for (const [provider, model] of Object.entries(modelsByProvider)) {
  t.test(`${provider} (${model}): generateText`, async (t) => {
    const r = await generateText({ model: troupe.chatModel(model), prompt: "hello there", maxRetries: 0 });
    t.equal(r.text, "Echo: hello there");
    t.equal(r.finishReason, "stop");
    t.ok((r.usage.inputTokens ?? 0) > 0 && (r.usage.outputTokens ?? 0) > 0, "usage read from the answer");
    t.equal(r.response.modelId, model);
  });

  t.test(`${provider} (${model}): streamText with a tool, two steps`, async (t) => {
    const inputs: unknown[] = [];
    const result = streamText({
      model: troupe.chatModel(model),
      prompt: "Weather in Paris?",
      maxRetries: 0,
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
    for await (const part of result.fullStream) {
      if (part.type === "tool-input-delta") deltas.push(part.delta);
      if (part.type === "error") throw part.error;
    }
    const steps = await result.steps;
    t.equal(steps.length, 2, "a tool step, then the answer");
    t.equal(steps[0]!.finishReason, "tool-calls");
    t.match(steps[0]!.toolCalls, [{ toolName: "get_weather", input: { input: "Weather in Paris?" } }]);
    t.match(inputs, [{ input: "Weather in Paris?" }], "the SDK ran the tool with the streamed arguments");
    t.match(JSON.parse(deltas.join("")), { input: "Weather in Paris?" }, "the argument fragments join to the arguments");
    t.match(await result.text, /^Tool said: .*sunny/);
    t.equal(await result.finishReason, "stop");
    t.ok(((await result.totalUsage).outputTokens ?? 0) > 0, "usage from include_usage");
  });
}

t.test("embed", async (t) => {
  const r = await embed({ model: troupe.embeddingModel("text-embedding-3-small"), value: "alpha", maxRetries: 0 });
  t.equal(r.embedding.length, 1536);
  t.ok(r.embedding.every((x) => typeof x === "number"));
  t.ok((r.usage.tokens ?? 0) > 0);
  const raw = await h.troupe.request("POST", "/openai/v1/embeddings", { token: h.user.testKey, body: { model: "text-embedding-3-small", input: "alpha", encoding_format: "float" } });
  const same = (raw.body as { data: { embedding: number[] }[] }).data[0]!.embedding;
  t.ok(r.embedding.every((x, i) => Math.abs(x - same[i]!) < 1e-6), "the vector Troupe returns for it");
});
