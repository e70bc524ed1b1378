// The official Anthropic SDK (unmodified: baseURL and apiKey only) against
// Troupe's /anthropic mount over real sockets: messages plain and streamed,
// and tool-use round trips plain and streamed, each through an OpenAI, an
// Anthropic and a Gemini model (the fakes); Anthropic's wire format of the
// stream; system blocks, stop_sequences, images, count_tokens, request-id;
// a failure after the stream started.
import Anthropic from "@anthropic-ai/sdk";
import t from "tap";
import { models, startCompatHarness } from "./anthropic-harness.ts";

t.setTimeout(90_000);
const h = await startCompatHarness();
t.teardown(() => h.stop());
const client = h.client();

const weather: Anthropic.Tool = {
  name: "get_weather",
  description: "Weather for a city",
  input_schema: { type: "object", properties: { input: { type: "string" } }, required: ["input"] },
};
const textOf = (m: Anthropic.Message): string => m.content.map((b) => (b.type === "text" ? b.text : "")).join("");

for (const [provider, model] of Object.entries(models)) {
  t.test(`${provider} (${model}): messages.create`, async (t) => {
    const m = await client.messages.create({ model, max_tokens: 100, messages: [{ role: "user", content: "hello there" }] });
    t.match(m, { type: "message", role: "assistant", model, stop_reason: "end_turn", stop_sequence: null });
    t.match(m.id, /^msg_/);
    t.equal(textOf(m), "Echo: hello there");
    t.ok(m.usage.input_tokens > 0 && m.usage.output_tokens > 0, "usage from the provider");
  });

  t.test(`${provider} (${model}): messages.stream and finalMessage`, async (t) => {
    const stream = client.messages.stream({ model, max_tokens: 100, messages: [{ role: "user", content: "hello stream" }] });
    const fragments: string[] = [];
    stream.on("text", (text) => fragments.push(text));
    const m = await stream.finalMessage();
    t.ok(fragments.length > 1, "text arrives in several deltas");
    t.equal(fragments.join(""), "Echo: hello stream");
    t.equal(textOf(m), "Echo: hello stream");
    t.match(m, { model, stop_reason: "end_turn", stop_sequence: null });
    t.ok(m.usage.output_tokens > 0, "message_delta carried the output tokens");
  });

  for (const streamed of [false, true]) {
    t.test(`${provider} (${model}): tool_use round trip, ${streamed ? "streamed" : "plain"}`, async (t) => {
      const messages: Anthropic.MessageParam[] = [{ role: "user", content: "What is the weather in Paris?" }];
      const ask = (): Promise<Anthropic.Message> =>
        streamed
          ? client.messages.stream({ model, max_tokens: 200, tools: [weather], messages }).finalMessage()
          : client.messages.create({ model, max_tokens: 200, tools: [weather], messages });
      const first = await ask();
      t.equal(first.stop_reason, "tool_use");
      const uses = first.content.filter((b): b is Anthropic.ToolUseBlock => b.type === "tool_use");
      t.equal(uses.length, 1);
      t.equal(uses[0]!.name, "get_weather");
      t.match(uses[0]!.input, { input: "What is the weather in Paris?" }, "the input arrives parsed");
      // The assistant turn goes back as the SDK returned it, then the result.
      messages.push({ role: "assistant", content: first.content });
      messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: uses[0]!.id, content: "sunny, 24 °C" }] });
      const second = await ask();
      t.equal(second.stop_reason, "end_turn");
      t.match(textOf(second), /sunny, 24 °C/);
      t.notOk(second.content.some((b) => b.type === "tool_use"));
    });
  }
}

t.test("the stream on the wire: Anthropic's named events in order, no [DONE]", async (t) => {
  const res = await fetch(`${h.troupe.url}/anthropic/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": h.liveKey, "anthropic-version": "2023-06-01", "content-type": "application/json" },
    body: JSON.stringify({ model: models.anthropic, max_tokens: 100, stream: true, tools: [weather], messages: [{ role: "user", content: "Paris?" }] }),
  });
  t.equal(res.status, 200);
  t.match(res.headers.get("content-type"), /^text\/event-stream/);
  t.equal(res.headers.get("request-id"), res.headers.get("x-request-id"));
  const raw = await res.text();
  t.notMatch(raw, /\[DONE\]/);
  const frames = raw.trim().split("\n\n").map((f) => {
    const [eventLine, dataLine] = f.split("\n");
    const event = eventLine!.replace(/^event: /, "");
    const data = JSON.parse(dataLine!.replace(/^data: /, "")) as Record<string, unknown>;
    t.equal(data["type"], event, `${event}: data.type names the event`);
    return { event, data };
  });
  t.same(
    frames.map((f) => f.event),
    ["message_start", "content_block_start", "content_block_delta", "content_block_stop", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"],
  );
  t.match(frames[4]!.data, { index: 1, content_block: { type: "tool_use", name: "get_weather", input: {} } });
  t.match(frames[5]!.data, { index: 1, delta: { type: "input_json_delta", partial_json: String } });
  t.match(frames[7]!.data, { delta: { stop_reason: "tool_use", stop_sequence: null }, usage: { output_tokens: Number } });
});

t.test("system blocks, metadata, top_k; stop_sequences cut the text, plain and streamed", async (t) => {
  const body = {
    model: models.openai,
    max_tokens: 100,
    system: [{ type: "text" as const, text: "You are terse." }],
    metadata: { user_id: "user-42" },
    top_k: 5,
    stop_sequences: ["STOP"],
    messages: [{ role: "user" as const, content: "one two STOP three" }],
  };
  const plain = await client.messages.create(body);
  t.equal(textOf(plain), "Echo: one two ");
  t.match(plain, { stop_reason: "stop_sequence", stop_sequence: "STOP" });
  const streamed = await client.messages.stream(body).finalMessage();
  t.equal(textOf(streamed), "Echo: one two ");
  t.match(streamed, { stop_reason: "stop_sequence", stop_sequence: "STOP" });
  const seen = h.fakes.openai.requests.at(-1)!.body as { messages: { role: string; content: unknown }[] };
  t.match(seen.messages[0], { role: "system", content: "You are terse." }, "the system prompt reached the provider");
});

t.test("an image block reaches a vision-capable model", async (t) => {
  const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
  const m = await client.messages.create({
    model: models.openai,
    max_tokens: 100,
    messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: png } }, { type: "text", text: "What is this?" }] }],
  });
  t.match(textOf(m), /\[image data:image\/png;base64/);
});

t.test("count_tokens counts without a provider call", async (t) => {
  const before = h.providerCalls();
  const short = await client.messages.countTokens({ model: models.gemini, messages: [{ role: "user", content: "hi" }] });
  const long = await client.messages.countTokens({ model: models.gemini, tools: [weather], messages: [{ role: "user", content: "hi there, a much longer question" }] });
  t.ok(short.input_tokens > 0);
  t.ok(long.input_tokens > short.input_tokens);
  t.equal(h.providerCalls(), before);
});

t.test("request-id: the SDK reads Troupe's request id", async (t) => {
  const { data, response, request_id } = await client.messages.create({ model: models.gemini, max_tokens: 10, messages: [{ role: "user", content: "hi" }] }).withResponse();
  t.equal(data.type, "message");
  t.match(request_id, /^req_/);
  t.equal(request_id, response.headers.get("x-request-id"));
});

t.test("a failure after the stream started: an `error` event the SDK raises as APIError", async (t) => {
  h.fakes.openai.faults.queue.push({ kind: "cut" });
  h.fakes.openai.faults.eventDelayMs = 20;
  t.teardown(() => void (h.fakes.openai.faults.eventDelayMs = 0));
  const stream = client.messages.stream({ model: models.openai, max_tokens: 100, messages: [{ role: "user", content: "one two three four five six seven eight nine ten" }] });
  const fragments: string[] = [];
  stream.on("text", (text) => fragments.push(text));
  const error = await stream.finalMessage().then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(fragments.length >= 1, "text arrived before the failure");
  t.type(error, Anthropic.APIError);
  t.match((error as InstanceType<typeof Anthropic.APIError>).error, { type: "error", error: { type: "api_error", message: String } });
});
