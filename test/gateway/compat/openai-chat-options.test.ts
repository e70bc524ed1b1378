// OpenAI's sampling and output options reach each provider in its own
// form (the fakes record what they were sent): top_p, stop, seed,
// max_completion_tokens, response_format; a JSON format routes only to
// models that can answer in JSON.
import t from "tap";
import { startCompatHarness } from "./openai-harness.ts";

t.setTimeout(60_000);
const h = await startCompatHarness();
t.teardown(() => h.stop());
const client = h.client();
const messages = [{ role: "user" as const, content: "one two three four five six" }];
const sent = (fake: keyof typeof h.fakes) => h.fakes[fake].requests.at(-1)!.body as Record<string, unknown>;

t.test("OpenAI: top_p, stop, seed, max_completion_tokens and a json_schema format, forwarded; user kept here", async (t) => {
  const r = await client.chat.completions.create({
    model: "gpt-4.1-mini",
    messages,
    top_p: 0.5,
    stop: "END",
    seed: 7,
    max_completion_tokens: 3,
    user: "end-user-1",
  });
  t.equal(r.choices[0]!.finish_reason, "length", "3 tokens: cut");
  const body = sent("openai");
  t.match(body, { top_p: 0.5, stop: ["END"], seed: 7, max_completion_tokens: 3 });
  t.notOk("user" in body, "the end-user id is not forwarded");
  // The fake answers a JSON format with a whole instance of the schema (never cut), so the format is its own call.
  const format = { type: "json_schema", json_schema: { name: "answer", schema: { type: "object", properties: { a: { type: "string" } } }, strict: true } } as const;
  await client.chat.completions.create({ model: "gpt-4.1-mini", messages, response_format: format });
  t.same(sent("openai").response_format, format);
});

t.test("Gemini: generationConfig carries them; json_object is a JSON mime type", async (t) => {
  await client.chat.completions.create({ model: "gemini-2.5-flash", messages, top_p: 0.25, stop: ["A", "B"], seed: 3, response_format: { type: "json_object" } });
  t.match(sent("gemini").generationConfig, { topP: 0.25, stopSequences: ["A", "B"], seed: 3, responseMimeType: "application/json" });
});

t.test("Anthropic: top_p and stop_sequences (it has no seed); text format accepted", async (t) => {
  await client.chat.completions.create({ model: "claude-haiku-4-5", messages, top_p: 0.9, stop: ["Z"], seed: 1, max_tokens: 20, response_format: { type: "text" } });
  const body = sent("anthropic");
  t.match(body, { top_p: 0.9, stop_sequences: ["Z"], max_tokens: 20 });
  t.notOk("seed" in body);
});

t.test("a fallback skips models that cannot answer in JSON", async (t) => {
  // Without a JSON format, gpt-4.1-mini's first equivalent is claude-haiku-4-5 (chat.test.ts, "auto falls back").
  h.fakes.openai.faults.queue.push({ kind: "status", status: 503 });
  const r = await client.chat.completions.create({ model: "gpt-4.1-mini", messages, response_format: { type: "json_object" } });
  t.equal(r.model, "gemini-2.5-flash", "Anthropic skipped: no json_output");
  t.ok(h.troupe.services.router.catalogue.get(r.model)?.capabilities.json_output);
});
