// The /gemini mount's translations without a server: a path's model and
// method, Gemini's Schema as JSON Schema, proto JSON's snake_case names, and
// Troupe's result and stream events as Gemini's answer chunks (thought parts,
// signatures, redacted thinking left out, usage counts from the extras).
import t from "tap";
import { modelActionOf } from "../../../gateway/compat/gemini/model-action.ts";
import { toJsonSchema } from "../../../gateway/compat/gemini/json-schema.ts";
import { camelFields } from "../../../gateway/compat/gemini/proto-json.ts";
import { toGenerateContentResponse } from "../../../gateway/compat/gemini/response.ts";
import { GenerateStreamTranslator } from "../../../gateway/compat/gemini/stream.ts";
import type { ChatResult } from "../../../providers/types.ts";

t.test("a path segment's model and method: split on the last colon", async (t) => {
  t.same(modelActionOf("gemini-2.5-flash:generateContent"), { model: "gemini-2.5-flash", action: "generateContent" });
  t.same(modelActionOf("gpt-4.1-mini:streamGenerateContent"), { model: "gpt-4.1-mini", action: "streamGenerateContent" });
  t.equal(modelActionOf("gemini-2.5-flash"), undefined, "no method");
  t.equal(modelActionOf(":generateContent"), undefined, "no model");
  t.equal(modelActionOf("gemini-2.5-flash:predict"), undefined, "a method not served");
});

t.test("Gemini's Schema as JSON Schema", async (t) => {
  const schema = { type: "OBJECT", propertyOrdering: ["a"], properties: { a: { type: "ARRAY", items: { type: "STRING", nullable: true } }, b: { anyOf: [{ type: "INTEGER" }] } }, required: ["a"] };
  t.same(toJsonSchema(schema), { type: "object", properties: { a: { type: "array", items: { type: ["string", "null"] } }, b: { anyOf: [{ type: "integer" }] } }, required: ["a"] });
});

t.test("snake_case field names become lowerCamelCase, the caller's own data stays as sent", async (t) => {
  const body = { generation_config: { max_output_tokens: 5 }, contents: [{ parts: [{ function_call: { name: "f", args: { city_name: "Paris" } } }] }], labels: { my_label: "x" } };
  t.same(camelFields(body), { generationConfig: { maxOutputTokens: 5 }, contents: [{ parts: [{ functionCall: { name: "f", args: { city_name: "Paris" } } }] }], labels: { my_label: "x" } });
  const camelCased = { contents: [{ parts: [{ text: "x" }] }], generationConfig: { topK: 1 } };
  t.equal(camelFields(camelCased), camelCased, "a body already in lowerCamelCase is read as it is, not copied");
  t.throws(() => camelFields({ generationConfig: { topK: 1, top_k: 2 } }), { code: "invalid_request", message: /body\.generationConfig\.topK: given twice/ });
});

const result: ChatResult = {
  content: "Paris.",
  finish_reason: "tool_calls",
  model: "claude-haiku-4-5",
  provider: "anthropic",
  input_tokens: 100,
  output_tokens: 20,
  tool_calls: [{ id: "toolu_1", name: "get_weather", arguments: { city: "Paris" } }],
  extras: {
    reasoning: [{ provider: "anthropic", text: "Think.", signature: "sig1" }, { provider: "anthropic", text: "", redacted: "opaque" }],
    cached_input_tokens: 80,
    reasoning_tokens: 12,
  },
};

t.test("a result: thought parts when asked, text, functionCall parts, usage from the extras", async (t) => {
  const shown = toGenerateContentResponse(result, "rid", true);
  t.same(shown.candidates[0]?.content.parts, [
    { text: "Think.", thought: true, thoughtSignature: "sig1" },
    { text: "Paris." },
    { functionCall: { id: "toolu_1", name: "get_weather", args: { city: "Paris" } } },
  ], "the redacted block is left out");
  t.equal(shown.candidates[0]?.finishReason, "STOP", "a function call ends with STOP, as Gemini's do");
  t.same(shown.usageMetadata, { promptTokenCount: 100, candidatesTokenCount: 20, totalTokenCount: 120, cachedContentTokenCount: 80, thoughtsTokenCount: 12 });
  t.same(shown.modelVersion, "claude-haiku-4-5");
  const hidden = toGenerateContentResponse(result, "rid", false);
  t.notOk(hidden.candidates[0]?.content.parts.some((p) => p.thought), "no thought parts without includeThoughts");
  const plain = toGenerateContentResponse({ ...result, finish_reason: "length", tool_calls: null, extras: undefined }, "rid", false);
  t.equal(plain.candidates[0]?.finishReason, "MAX_TOKENS");
  t.same(plain.usageMetadata, { promptTokenCount: 100, candidatesTokenCount: 20, totalTokenCount: 120 }, "no cache or thought counts when none were reported");
});

t.test("stream events: one chunk each, thinking only when asked, the finish with usage", async (t) => {
  const events = [{ reasoning_delta: "Hm" }, { reasoning_block: { provider: "gemini", text: "Hm", signature: "s" } }, { delta: "Hi" }, { delta: "" }, { tool_call: { id: "c1", name: "f", arguments: {} } }, { finish_reason: "stop" as const, input_tokens: 3, output_tokens: 4, model: "gemini-2.5-flash", provider: "gemini", extras: { reasoning_tokens: 2 } }];
  const shown = new GenerateStreamTranslator("rid", "gemini-2.5-flash", true);
  const chunks = events.flatMap((e) => shown.push(e));
  t.same(chunks.map((c) => c.candidates[0]?.content.parts), [[{ text: "Hm", thought: true }], [{ text: "", thought: true, thoughtSignature: "s" }], [{ text: "Hi" }], [{ functionCall: { id: "c1", name: "f", args: {} } }], []]);
  t.match(chunks.at(-1), { candidates: [{ finishReason: "STOP" }], usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 4, totalTokenCount: 7, thoughtsTokenCount: 2 }, responseId: "rid" });
  const hidden = new GenerateStreamTranslator("rid", "gemini-2.5-flash", false);
  t.equal(events.flatMap((e) => hidden.push(e)).length, 3, "thinking is not streamed unless includeThoughts");
});
