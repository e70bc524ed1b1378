// Streams' edges through the official `openai` SDK: a client that stops
// reading stops the upstream call (as on /v1), a failure after the stream
// started reaches the SDK as its APIError, and the raw wire format.
import t from "tap";
import OpenAI from "openai";
import { startCompatHarness } from "./openai-harness.ts";

t.setTimeout(60_000);
const h = await startCompatHarness();
t.teardown(() => h.stop());
const client = h.client();
const long = { model: "gpt-4.1-mini", messages: [{ role: "user" as const, content: "a b c d e f g h i j k l m n o p" }], stream: true as const };

t.test("a client that stops reading stops the upstream call", async (t) => {
  h.fakes.openai.faults.eventDelayMs = 100;
  t.teardown(() => void (h.fakes.openai.faults.eventDelayMs = 0));
  const stream = await client.chat.completions.create(long);
  const upstream = h.fakes.openai.requests.at(-1)!;
  for await (const chunk of stream) {
    if (chunk.choices[0]?.delta.content) break; // leaving the loop aborts the SDK's request
  }
  t.equal(await h.fakes.openai.outcome(upstream), "closed early", "Troupe hung up on the provider");
});

t.test("a failure after the stream started: the SDK raises OpenAI's error event", async (t) => {
  h.fakes.openai.faults.queue.push({ kind: "cut" });
  h.fakes.openai.faults.eventDelayMs = 20;
  t.teardown(() => void (h.fakes.openai.faults.eventDelayMs = 0));
  const stream = await client.chat.completions.create({ ...long, routing_strategy: "manual" } as OpenAI.Chat.Completions.ChatCompletionCreateParamsStreaming);
  let text = "";
  const error = await (async () => {
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
  })().catch((e: unknown) => e);
  t.ok(text.length > 0, "some text arrived first");
  t.type(error, OpenAI.APIError);
  t.match((error as InstanceType<typeof OpenAI.APIError>).error, { type: "server_error", code: "provider_error", message: String });
});

t.test("the wire: chat.completion.chunk frames, then data: [DONE]", async (t) => {
  const res = await fetch(`${h.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${h.user.testKey}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "simulated-chat", messages: [{ role: "user", content: "Hi!" }], stream: true }),
  });
  t.match(res.headers.get("content-type"), /^text\/event-stream/);
  const frames = (await res.text()).split("\n\n").filter((f) => f !== "");
  t.ok(frames.every((f) => f.startsWith("data: ")));
  t.equal(frames.at(-1), "data: [DONE]");
  const chunks = frames.slice(0, -1).map((f) => JSON.parse(f.slice(6)) as Record<string, unknown>);
  t.same(
    chunks.map((c) => (c.choices as { delta: unknown; finish_reason: unknown }[])[0]),
    [
      { index: 0, delta: { role: "assistant", content: "" }, finish_reason: null, logprobs: null },
      { index: 0, delta: { content: "Simulated reply to: Hi!" }, finish_reason: null, logprobs: null },
      { index: 0, delta: {}, finish_reason: "stop", logprobs: null },
    ],
  );
  t.notOk("usage" in chunks[0]!, "no usage fields without include_usage");
});
