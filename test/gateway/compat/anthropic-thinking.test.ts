// Thinking through the /anthropic mount, with signatures, both ways: the
// official SDK (messages and beta.messages, JSON and streamed) asks a Claude
// model to think, gets the fake's signed thinking block (streamed as
// thinking_delta then signature_delta), and sends it back on the next turn
// of a tool round trip, where the fake checks the signature (a changed one
// fails). Another provider's thinking (a Gemini thought signature) renders
// as a thinking block whose signature goes back to Gemini and to no other
// provider.
import Anthropic from "@anthropic-ai/sdk";
import t from "tap";
import { toMessage } from "../../../gateway/compat/anthropic/response.ts";
import { MessageStreamTranslator } from "../../../gateway/compat/anthropic/stream.ts";
import { fromThinkingBlock, toThinkingBlock } from "../../../gateway/compat/anthropic/thinking.ts";
import { toChatRequest } from "../../../gateway/compat/anthropic/request.ts";
import { messagesBodySchema } from "../../../gateway/compat/anthropic/schemas.ts";
import { toAnthropicMessages } from "../../../providers/anthropic/chat.ts";
import type { ReasoningBlock } from "../../../providers/types.ts";
import { fakeThinkingSignature } from "../../fakes/anthropic-fake.ts";
import { models, startCompatHarness } from "./anthropic-harness.ts";

t.setTimeout(90_000);
const h = await startCompatHarness();
t.teardown(() => h.stop());
const client = h.client(undefined, { maxRetries: 0 });

const weather: Anthropic.Tool = { name: "get_weather", description: "Weather for a city", input_schema: { type: "object", properties: { input: { type: "string" } } } };
const thinking = { type: "enabled", budget_tokens: 2048 } as const;
type Ask = (messages: Anthropic.MessageParam[]) => Promise<Anthropic.Message>;

const clients: [string, Ask][] = [
  ["messages.create", (messages) => client.messages.create({ model: models.anthropic, max_tokens: 4096, thinking, tools: [weather], messages })],
  ["messages.stream", (messages) => client.messages.stream({ model: models.anthropic, max_tokens: 4096, thinking, tools: [weather], messages }).finalMessage()],
  [
    "beta.messages.create",
    async (messages) => (await client.beta.messages.create({ model: models.anthropic, max_tokens: 4096, thinking, tools: [weather], messages: messages as Anthropic.Beta.BetaMessageParam[] })) as unknown as Anthropic.Message,
  ],
  [
    "beta.messages.stream",
    async (messages) =>
      (await client.beta.messages.stream({ model: models.anthropic, max_tokens: 4096, thinking, tools: [weather], messages: messages as Anthropic.Beta.BetaMessageParam[] }).finalMessage()) as unknown as Anthropic.Message,
  ],
];

for (const [name, ask] of clients) {
  t.test(`${name}: a signed thinking block, returned on the next turn, accepted by Anthropic`, async (t) => {
    const messages: Anthropic.MessageParam[] = [{ role: "user", content: "Weather in Paris?" }];
    const first = await ask(messages);
    const block = first.content[0];
    t.equal(block?.type, "thinking", "thinking comes first");
    if (block?.type !== "thinking") return;
    t.equal(block.thinking, "Thinking about: Weather in Paris?");
    t.equal(block.signature, fakeThinkingSignature(block.thinking), "Anthropic's signature, unchanged");
    const use = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === "tool_use")!;
    messages.push({ role: "assistant", content: first.content });
    messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "sunny" }] });
    const second = await ask(messages);
    t.match(second.content.at(-1), { type: "text", text: "Tool said: sunny" });
    const sent = h.fakes.anthropic.requests.at(-1)!.body as { messages: { role: string; content: { type: string; signature?: string }[] }[] };
    t.match(sent.messages[1]!.content[0], { type: "thinking", signature: block.signature }, "the block went back first in its turn, signed");
  });
}

t.test("the stream's thinking block: content_block_start thinking, thinking_delta…, signature_delta, content_block_stop", async (t) => {
  const events: Anthropic.MessageStreamEvent[] = [];
  const stream = client.messages.stream({ model: models.anthropic, max_tokens: 4096, thinking, messages: [{ role: "user", content: "hi" }] });
  stream.on("streamEvent", (e) => events.push(e));
  await stream.finalMessage();
  const kinds = events.map((e) => (e.type === "content_block_delta" ? e.delta.type : e.type === "content_block_start" ? `start:${e.content_block.type}` : e.type));
  const signatureAt = kinds.indexOf("signature_delta");
  t.same(kinds.slice(0, 3), ["message_start", "start:thinking", "thinking_delta"]);
  t.ok(signatureAt > 2 && kinds.slice(2, signatureAt).every((k) => k === "thinking_delta"), "thinking deltas, then the signature");
  t.same(kinds.slice(signatureAt + 1, signatureAt + 3), ["content_block_stop", "start:text"]);
});

t.test("a changed signature is refused by Anthropic (the fake checks it)", async (t) => {
  const first = await client.messages.create({ model: models.anthropic, max_tokens: 4096, thinking, messages: [{ role: "user", content: "hi" }] });
  const block = first.content[0] as Anthropic.ThinkingBlock;
  const error = await client.messages
    .create({
      model: models.anthropic,
      max_tokens: 4096,
      thinking,
      messages: [{ role: "user", content: "hi" }, { role: "assistant", content: [{ ...block, signature: `${block.signature}x` }, { type: "text", text: "hello" }] }, { role: "user", content: "again" }],
    })
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  t.type(error, Anthropic.APIError);
});

// Gemini's thought signatures as the Gemini adapter gives them (extras.reasoning, provider "gemini").
const gemini: ReasoningBlock = { provider: "gemini", text: "", signature: "CiQB-gemini-thought-signature" };

t.test("another provider's thinking: a thinking block whose signature returns it to that provider", async (t) => {
  const message = toMessage({ content: "hi", finish_reason: "stop", model: models.gemini, provider: "gemini", input_tokens: 3, output_tokens: 1, tool_calls: null, extras: { reasoning: [gemini], cached_input_tokens: 2 } }, "msg_1");
  const block = message.content[0];
  t.match(block, { type: "thinking", thinking: "", signature: /^troupe\./ });
  t.same(message.usage, { input_tokens: 1, output_tokens: 1, cache_creation_input_tokens: null, cache_read_input_tokens: 2 }, "Gemini's cached tokens are cache reads, apart from input_tokens");
  if (block?.type !== "thinking") return;
  t.same(fromThinkingBlock(block, "body.messages.1.content.0"), gemini, "the same block comes back");
  // Returned through the mount: the assistant message carries it for Gemini; the Anthropic adapter leaves it out.
  const request = toChatRequest(
    messagesBodySchema.parse({ model: models.gemini, max_tokens: 10, messages: [{ role: "user", content: "a" }, { role: "assistant", content: [block, { type: "text", text: "hi" }] }, { role: "user", content: "b" }] }),
  );
  t.same(request.messages[1]?.reasoning, [gemini]);
  t.same(toAnthropicMessages(request.messages).turns[1]?.content, [{ type: "text", text: "hi" }], "not sent to Anthropic, which cannot check it");
  // Anthropic's own block stays Anthropic's, unwrapped.
  t.same(toThinkingBlock({ provider: "anthropic", text: "t", signature: "sig" }), { type: "thinking", thinking: "t", signature: "sig" });
  t.same(toThinkingBlock({ provider: "anthropic", text: "", redacted: "enc" }), { type: "redacted_thinking", data: "enc" });
});

t.test("a forged wrapped signature is a 400 naming it", async (t) => {
  const answer = await fetch(`${h.troupe.url}/anthropic/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": h.liveKey },
    body: JSON.stringify({
      model: models.gemini,
      max_tokens: 10,
      messages: [{ role: "user", content: "a" }, { role: "assistant", content: [{ type: "thinking", thinking: "", signature: "troupe.bm90IGpzb24" }] }, { role: "user", content: "b" }],
    }),
  });
  t.equal(answer.status, 400);
  t.match(await answer.json(), { error: { type: "invalid_request_error", message: /messages\.1\.content\.0\.signature/ } });
});

t.test("another provider's streamed thinking: deltas, then the signature that returns it there", async (t) => {
  const translator = new MessageStreamTranslator("msg_1", models.gemini, { provider: "gemini" });
  const frames = [
    translator.start(3),
    ...translator.push({ reasoning_delta: "Considering" }),
    ...translator.push({ reasoning_block: { provider: "gemini", text: "Considering", signature: "sig-g" } }),
    ...translator.push({ delta: "Hello" }),
    ...translator.finish({ finish_reason: "stop", input_tokens: 3, output_tokens: 1, model: models.gemini, provider: "gemini", extras: { cached_input_tokens: 2 } }),
  ];
  const deltas = frames.filter((f) => f.event === "content_block_delta").map((f) => f.data.delta as { type: string; signature?: string });
  t.same(deltas.map((d) => d.type), ["thinking_delta", "signature_delta", "text_delta"]);
  const signature = deltas[1]!.signature!;
  t.same(fromThinkingBlock({ type: "thinking", thinking: "Considering", signature }, "p"), { provider: "gemini", text: "Considering", signature: "sig-g" });
  t.match(frames.find((f) => f.event === "message_delta")?.data, { usage: { input_tokens: 1, cache_read_input_tokens: 2 } });
  // Thinking deltas the provider never signed are closed, when the text starts, as the requested provider's.
  const unsigned = new MessageStreamTranslator("msg_2", models.openai, { provider: "openai" });
  const more = [...unsigned.push({ reasoning_delta: "hmm" }), ...unsigned.push({ delta: "Hi" })];
  t.same(more.map((f) => (f.event === "content_block_delta" ? (f.data.delta as { type: string }).type : f.event)), ["content_block_start", "thinking_delta", "signature_delta", "content_block_stop", "content_block_start", "text_delta"]);
});

for (const streamed of [false, true]) {
  t.test(`Gemini through the mount (${streamed ? "stream" : "JSON"}): its thought signature as a thinking block, back to Gemini on the next turn`, async (t) => {
    const ask: Ask = (messages) => {
      const params = { model: models.gemini, max_tokens: 4096, thinking, tools: [weather], messages };
      return streamed ? client.messages.stream(params).finalMessage() : client.messages.create(params);
    };
    const messages: Anthropic.MessageParam[] = [{ role: "user", content: "Weather in Rome?" }];
    const first = await ask(messages);
    const block = first.content.find((b): b is Anthropic.ThinkingBlock => b.type === "thinking");
    t.match(block, { type: "thinking", signature: /^troupe\./ });
    const issued = block ? fromThinkingBlock(block, "p") : undefined;
    t.match(issued, { provider: "gemini", signature: String });
    const use = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === "tool_use")!;
    messages.push({ role: "assistant", content: first.content });
    messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "cloudy" }] });
    const second = await ask(messages);
    t.match(second.content.at(-1), { type: "text", text: /cloudy/ });
    const sent = JSON.stringify(h.fakes.gemini.requests.at(-1)!.body);
    t.ok(issued?.signature !== undefined && sent.includes(issued.signature), "Gemini got its own thoughtSignature back");
  });
}

t.test("an OpenAI model's cached prompt tokens are cache_read_input_tokens", async (t) => {
  const long = Array.from({ length: 1200 }, (_, i) => `word${i}`).join(" ");
  const messages: Anthropic.MessageParam[] = [
    { role: "user", content: long },
    { role: "assistant", content: "noted" },
    { role: "user", content: "first" },
  ];
  await client.messages.create({ model: models.openai, max_tokens: 50, messages });
  const again = await client.messages.create({ model: models.openai, max_tokens: 50, messages: [...messages.slice(0, 2), { role: "user", content: "second" }] });
  t.ok((again.usage.cache_read_input_tokens ?? 0) > 0, "read from OpenAI's automatic cache");
  t.ok(again.usage.input_tokens > 0, "the rest stays input_tokens");
});
