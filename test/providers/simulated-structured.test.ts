// The simulated model honours response_format (a JSON answer, an instance of
// the schema), its tool arguments validate against the tool's parameters,
// and it reports prompt-cache counts by its documented rule. Validity is
// z.fromJSONSchema's verdict, not the generator's.
import t from "tap";
import { z } from "zod";
import { createSimulatedAdapter } from "../../providers/simulated/index.ts";
import type { ChatRequest } from "../../providers/chat-request.ts";
import type { StreamEvent } from "../../providers/types.ts";

const sim = createSimulatedAdapter();
const opts = { signal: new AbortController().signal, upstreamModel: "simulated-chat" };
const schema = {
  type: "object",
  additionalProperties: false,
  required: ["title", "rating", "genres"],
  properties: { title: { type: "string", minLength: 1 }, rating: { type: "integer", minimum: 1, maximum: 5 }, genres: { type: "array", minItems: 1, items: { enum: ["drama", "comedy"] } } },
};

async function streamed(req: ChatRequest): Promise<{ text: string; events: StreamEvent[] }> {
  const events: StreamEvent[] = [];
  for await (const e of sim.chatStream!(req, opts)) events.push(e);
  return { text: events.map((e) => ("delta" in e ? e.delta : "")).join(""), events };
}

t.test("json_schema: an instance of the schema, the same for the same request, streamed alike", async (t) => {
  const req: ChatRequest = { messages: [{ role: "user", content: "review a film" }], response_format: { type: "json_schema", name: "review", schema, strict: true } };
  const a = await sim.chat!(req, opts);
  const parsed = z.fromJSONSchema(schema as never).safeParse(JSON.parse(a.content));
  t.ok(parsed.success, `valid: ${a.content}`);
  t.equal((await sim.chat!(req, opts)).content, a.content, "deterministic");
  t.equal((await streamed(req)).text, a.content, "the stream says the same");
  const other = await sim.chat!({ ...req, messages: [{ role: "user", content: "review another film" }] }, opts);
  t.ok(z.fromJSONSchema(schema as never).safeParse(JSON.parse(other.content)).success);
});

t.test("json_object: a JSON object carrying the plain answer", async (t) => {
  const r = await sim.chat!({ messages: [{ role: "user", content: "hi" }], response_format: { type: "json_object" } }, opts);
  t.same(JSON.parse(r.content), { answer: "Simulated reply to: hi" });
});

t.test("tool arguments validate against the tool's parameters", async (t) => {
  const parameters = { type: "object", required: ["city", "days", "unit"], properties: { city: { type: "string" }, days: { type: "integer", minimum: 1, maximum: 7 }, unit: { enum: ["C", "F"] }, detail: { type: "boolean" } } };
  const tools = [{ name: "forecast", description: "Weather", parameters }];
  const check = z.fromJSONSchema(parameters as never);
  for (const [content, extra] of [["call forecast", {}], ["forecast: Paris", { tool_choice: undefined }], ["hello", { tool_choice: "required" as const }], ["hello", { tool_choice: { name: "forecast" } }]] as const) {
    const r = await sim.chat!({ messages: [{ role: "user", content }], tools, ...extra }, opts);
    const args = r.tool_calls?.[0]?.arguments;
    t.ok(args && check.safeParse(args).success, `${content} ${JSON.stringify(extra)}: ${JSON.stringify(args)}`);
  }
  const named = await sim.chat!({ messages: [{ role: "user", content: "forecast: Paris" }], tools }, opts);
  t.equal(named.tool_calls?.[0]?.arguments["city"], "Paris", "the text goes to the first string parameter");
  const explicit = await sim.chat!({ messages: [{ role: "user", content: 'call forecast {"x":1}' }], tools }, opts);
  t.same(explicit.tool_calls?.[0]?.arguments, { x: 1 }, "the caller's own JSON is sent as written");
  const loose = await sim.chat!({ messages: [{ role: "user", content: "call lookup" }], tools: [{ name: "lookup", description: "", parameters: { type: "object", properties: { q: { type: "string" } } } }] }, opts);
  t.same(loose.tool_calls?.[0]?.arguments, {}, "nothing required: {} as before");
});

t.test("prompt cache: a prefix of 1,024+ tokens is written on a first turn and read once the conversation goes on", async (t) => {
  const long = "word ".repeat(1100).trim();
  const first = await sim.chat!({ messages: [{ role: "system", content: long }, { role: "user", content: "q1" }] }, opts);
  t.same(first.extras, { cache_write_input_tokens: 1024 }, "1,103 prefix tokens: 1,024 written (a multiple of 128)");
  const next: ChatRequest = { messages: [{ role: "system", content: long }, { role: "user", content: "q1" }, { role: "assistant", content: "a1" }, { role: "user", content: "q2" }] };
  const second = await sim.chat!(next, opts);
  t.same(second.extras, { cached_input_tokens: 1024 });
  t.ok(second.input_tokens > 1024, "the counts are parts of input_tokens");
  const finish = (await streamed(next)).events.find((e) => "finish_reason" in e);
  t.same(finish && "extras" in finish ? finish.extras : undefined, { cached_input_tokens: 1024 }, "the stream's finish says the same");
  const short = await sim.chat!({ messages: [{ role: "system", content: "short" }, { role: "assistant", content: "a" }, { role: "user", content: "q" }] }, opts);
  t.equal(short.extras, undefined, "under 1,024 prefix tokens: no cache");
});
