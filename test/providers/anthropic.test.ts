import t from "tap";
import { createAnthropicAdapter } from "../../providers/anthropic/index.ts";
import { toAnthropicMessages } from "../../providers/anthropic/chat.ts";
import { mapAnthropicFinishReason } from "../../providers/anthropic/map-anthropic-finish-reason.ts";
import { ProviderCallError } from "../../providers/errors.ts";
import { startAnthropicFake } from "../fakes/anthropic-fake.ts";
import { collect, conversationSuite } from "./conversation-suite.ts";

const fake = await startAnthropicFake({ apiKey: "ak-test" });
const adapter = createAnthropicAdapter({ baseUrl: fake.url, apiKey: "ak-test" });
t.teardown(async () => {
  await adapter.close?.();
  await fake.close();
});
const signal = new AbortController().signal;

await conversationSuite(t, adapter, "claude-haiku-4-5");

t.test("request mapping: system apart, tool results first and merged into one user turn, images", async (t) => {
  const { system, turns } = toAnthropicMessages([
    { role: "system", content: "S" },
    { role: "user", content: "look", images: [{ url: "https://x/a.png" }, { base64: "AAAA", media_type: "image/png" }] },
    { role: "assistant", content: "", tool_calls: [{ id: "a", name: "f", arguments: {} }, { id: "b", name: "g", arguments: { x: 1 } }] },
    { role: "tool", tool_call_id: "a", content: "ra" },
    { role: "tool", tool_call_id: "b", content: "rb" },
    { role: "user", content: "and?" },
  ]);
  t.equal(system, "S");
  t.equal(turns.length, 3);
  t.same(turns[0]!.content.slice(0, 2), [
    { type: "image", source: { type: "url", url: "https://x/a.png" } },
    { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } },
  ]);
  t.same(turns[1]!.content, [
    { type: "tool_use", id: "a", name: "f", input: {} },
    { type: "tool_use", id: "b", name: "g", input: { x: 1 } },
  ]);
  t.same(turns[2], {
    role: "user",
    content: [
      { type: "tool_result", tool_use_id: "a", content: "ra" },
      { type: "tool_result", tool_use_id: "b", content: "rb" },
      { type: "text", text: "and?" },
    ],
  });
});

t.test("headers and defaults: x-api-key, anthropic-version, max_tokens filled in", async (t) => {
  fake.requests.length = 0;
  await adapter.chat!({ messages: [{ role: "user", content: "hi" }], temperature: 1.5 }, { signal, upstreamModel: "claude-haiku-4-5" });
  const req = fake.requests[0]!;
  t.equal(req.headers["x-api-key"], "ak-test");
  t.equal(req.headers["anthropic-version"], "2023-06-01");
  t.equal((req.body as { max_tokens: number }).max_tokens, 4096);
  t.equal((req.body as { temperature: number }).temperature, 1, "temperature clamped to Anthropic's 0..1");
});

t.test("529 overloaded is retryable; a cut stream is a connection failure", async (t) => {
  fake.faults.queue.push({ kind: "status", status: 529 });
  const e = (await adapter.chat!({ messages: [{ role: "user", content: "x" }] }, { signal, upstreamModel: "m" }).catch((x: unknown) => x)) as ProviderCallError;
  t.equal(e.status, 529);
  t.equal(e.retryable, true);
  fake.faults.queue.push({ kind: "cut" });
  const cut = await collect(adapter.chatStream!({ messages: [{ role: "user", content: "a b c d e f g" }] }, { signal, upstreamModel: "m" })).catch((x: unknown) => x);
  t.equal((cut as ProviderCallError).kind, "connection");
});

t.test("finish reason mapping", async (t) => {
  t.equal(mapAnthropicFinishReason("end_turn"), "stop");
  t.equal(mapAnthropicFinishReason("stop_sequence"), "stop");
  t.equal(mapAnthropicFinishReason("max_tokens"), "length");
  t.equal(mapAnthropicFinishReason("tool_use"), "tool_calls");
  t.equal(mapAnthropicFinishReason("refusal"), "content_filter");
  t.equal(mapAnthropicFinishReason("something_new"), "error");
});
