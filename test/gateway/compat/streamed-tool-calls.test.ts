// Streamed tool calls as each SDK reads them off the wire, through an
// OpenAI, an Anthropic and a Gemini model: on /openai/v1 (the official
// `openai` npm SDK's raw chunks) a tool_calls delta with index, id, type and
// name, then argument fragments carrying only the index, as OpenAI streams
// them; on /anthropic (the official `@anthropic-ai/sdk`'s raw events) a
// tool_use content_block_start, input_json_delta pieces, content_block_stop.
import Anthropic from "@anthropic-ai/sdk";
import t from "tap";
import { modelsByProvider, startCompatHarness, weatherTool } from "./openai-harness.ts";

t.setTimeout(60_000);
const h = await startCompatHarness();
t.teardown(() => h.stop());
const openai = h.client();
const anthropic = new Anthropic({ baseURL: `${h.troupe.url}/anthropic`, apiKey: h.user.testKey, maxRetries: 0 });

for (const [provider, model] of Object.entries(modelsByProvider)) {
  t.test(`${provider} (${model}): /openai/v1 tool_calls deltas`, async (t) => {
    const stream = await openai.chat.completions.create({ model, messages: [{ role: "user", content: "Weather in Paris?" }], tools: [weatherTool], stream: true });
    const deltas: { index: number; id?: string; type?: string; function?: { name?: string; arguments?: string } }[] = [];
    let finish: string | null = null;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      if (!choice) continue;
      finish = choice.finish_reason ?? finish;
      deltas.push(...(choice.delta.tool_calls ?? []));
    }
    t.equal(finish, "tool_calls");
    const [head, ...rest] = deltas;
    t.same(Object.keys(head!).sort(), ["function", "id", "index", "type"], "the first delta names the call");
    t.match(head, { index: 0, id: String, type: "function", function: { name: "get_weather", arguments: "" } });
    t.ok(rest.length >= 2, "the arguments in several fragments");
    for (const d of rest) t.same(Object.keys(d).sort(), ["function", "index"], "a fragment: index and arguments only");
    t.ok(rest.every((d) => d.index === 0 && Object.keys(d.function!).join() === "arguments"));
    t.same(JSON.parse(rest.map((d) => d.function!.arguments).join("")), { input: "Weather in Paris?", n: 1 }, "the fragments join to the arguments");
  });

  t.test(`${provider} (${model}): /anthropic input_json_delta`, async (t) => {
    const stream = await anthropic.messages.create({
      model,
      max_tokens: 200,
      stream: true,
      tools: [{ name: "get_weather", description: "Weather for a city", input_schema: { type: "object", properties: { input: { type: "string" } }, required: ["input"] } }],
      messages: [{ role: "user", content: "Weather in Paris?" }],
    });
    const events: Anthropic.RawMessageStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const start = events.findIndex((e) => e.type === "content_block_start" && e.content_block.type === "tool_use");
    t.ok(start >= 0, "a tool_use block starts");
    const startEvent = events[start] as Anthropic.RawContentBlockStartEvent;
    t.match(startEvent.content_block, { type: "tool_use", id: String, name: "get_weather", input: {} });
    const block = startEvent.index;
    const pieces: string[] = [];
    let i = start + 1;
    for (; events[i]?.type === "content_block_delta"; i++) {
      const e = events[i] as Anthropic.RawContentBlockDeltaEvent;
      t.equal(e.index, block);
      if (e.delta.type !== "input_json_delta") throw new Error(`a ${e.delta.type} inside the tool_use block`);
      pieces.push(e.delta.partial_json);
    }
    t.ok(pieces.length >= 1, "input_json_delta events");
    t.same(JSON.parse(pieces.join("")), { input: "Weather in Paris?", n: 1 }, "the partial_json pieces join to the input");
    t.match(events[i], { type: "content_block_stop", index: block });
    t.match(events.at(-2), { type: "message_delta", delta: { stop_reason: "tool_use" } });
    t.match(events.at(-1), { type: "message_stop" });
  });
}
