// The edges of the /anthropic mount's translation and the Anthropic
// adapter that a fake round trip does not reach: when thinking cannot be
// sent (a forced tool, a budget that does not fit), where a cache breakpoint
// lands, disable_parallel_tool_use keeping one tool call (JSON and stream),
// a budget not under max_tokens refused by name.
import t from "tap";
import { toChatRequest } from "../../../gateway/compat/anthropic/request.ts";
import { toMessage } from "../../../gateway/compat/anthropic/response.ts";
import { messagesBodySchema } from "../../../gateway/compat/anthropic/schemas.ts";
import { MessageStreamTranslator } from "../../../gateway/compat/anthropic/stream.ts";
import { thinkingOf, toAnthropicMessages } from "../../../providers/anthropic/chat.ts";
import type { ChatRequest } from "../../../providers/chat-request.ts";
import type { ChatResult } from "../../../providers/types.ts";

const parse = (body: Record<string, unknown>) => messagesBodySchema.parse({ model: "claude-haiku-4-5", max_tokens: 4096, messages: [{ role: "user", content: "hi" }], ...body });
const base: ChatRequest = { messages: [{ role: "user", content: "hi" }] };

t.test("thinkingOf: a budget or an effort under max_tokens; none when off, forced or too small", async (t) => {
  t.same(thinkingOf({ ...base, reasoning: { budget_tokens: 5000 } }, 4096), { type: "enabled", budget_tokens: 4095 });
  t.same(thinkingOf({ ...base, reasoning: { effort: "medium" } }, 32000), { type: "enabled", budget_tokens: 8192 });
  t.equal(thinkingOf({ ...base, reasoning: { effort: "high" } }, 1024), undefined, "no room for Anthropic's 1,024-token minimum");
  t.equal(thinkingOf({ ...base, reasoning: { off: true, budget_tokens: 2048 } }, 4096), undefined);
  t.equal(thinkingOf({ ...base, reasoning: { budget_tokens: 2048 }, tool_choice: "required" }, 4096), undefined, "Anthropic refuses thinking with a forced tool");
  t.equal(thinkingOf({ ...base, reasoning: { budget_tokens: 2048 }, tool_choice: { name: "x" } }, 4096), undefined);
  t.same(thinkingOf({ ...base, reasoning: { budget_tokens: 2048 }, tool_choice: "auto" }, 4096), { type: "enabled", budget_tokens: 2048 });
});

t.test("a thinking budget not under max_tokens is a 400 naming it", async (t) => {
  t.throws(() => toChatRequest(parse({ max_tokens: 2048, thinking: { type: "enabled", budget_tokens: 2048 } })), { code: "invalid_request", details: [{ path: "body.thinking.budget_tokens" }] });
});

t.test("cache breakpoints land on the block they were on: system, a tool result before the turn's text, a user turn", async (t) => {
  const request = toChatRequest(
    parse({
      system: [{ type: "text", text: "S", cache_control: { type: "ephemeral", ttl: "1h" } }],
      tools: [{ name: "f", input_schema: { type: "object" } }],
      messages: [
        { role: "user", content: "go" },
        { role: "assistant", content: [{ type: "tool_use", id: "tu_1", name: "f", input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "tu_1", content: "r", cache_control: { type: "ephemeral" } }, { type: "text", text: "next" }] },
      ],
    }),
  );
  const { system, turns } = toAnthropicMessages(request.messages);
  t.same(system, [{ type: "text", text: "S", cache_control: { type: "ephemeral", ttl: "1h" } }]);
  // The mount puts the turn's breakpoint after its last message (the text); the adapter puts it on that message's block.
  t.same(turns[2]?.content, [{ type: "tool_result", tool_use_id: "tu_1", content: "r" }, { type: "text", text: "next", cache_control: { type: "ephemeral" } }]);
  const only = toAnthropicMessages([{ role: "user", content: "q" }, { role: "assistant", content: "", tool_calls: [{ id: "a", name: "f", arguments: {} }] }, { role: "user", content: "more" }, { role: "tool", tool_call_id: "a", content: "r", cache: {} }]);
  t.same(only.turns[2]?.content, [{ type: "tool_result", tool_use_id: "a", content: "r", cache_control: { type: "ephemeral" } }, { type: "text", text: "more" }], "a tool message's breakpoint is on its tool_result, which goes before the turn's text");
});

const twoCalls: ChatResult = {
  content: "",
  finish_reason: "tool_calls",
  model: "gpt-4.1-mini",
  provider: "openai",
  input_tokens: 5,
  output_tokens: 5,
  tool_calls: [
    { id: "c1", name: "f", arguments: { a: 1 } },
    { id: "c2", name: "f", arguments: { a: 2 } },
  ],
};

t.test("disable_parallel_tool_use keeps the first tool call, JSON and stream", async (t) => {
  t.equal(toMessage(twoCalls, "msg_1").content.length, 2);
  t.same(toMessage(twoCalls, "msg_1", { oneToolCall: true }).content, [{ type: "tool_use", id: "c1", name: "f", input: { a: 1 } }]);
  const stream = new MessageStreamTranslator("msg_2", "gpt-4.1-mini", { provider: "openai", oneToolCall: true });
  const frames = twoCalls.tool_calls!.flatMap((tool_call) => stream.push({ tool_call }));
  t.same(frames.filter((f) => f.event === "content_block_start").map((f) => (f.data.content_block as { id: string }).id), ["c1"]);
});

t.test("omitted thinking: streamed thinking deltas are not sent on, the block still opens and closes with its signature", async (t) => {
  const events = [{ reasoning_delta: "weighing " }, { reasoning_delta: "options" }, { reasoning_block: { provider: "anthropic", text: "weighing options", signature: "sig-1" } }, { delta: "Done." }];
  const kinds = (omitThinking: boolean): string[] => {
    const stream = new MessageStreamTranslator("msg_3", "claude-haiku-4-5", { provider: "anthropic", omitThinking });
    return events.flatMap((e) => stream.push(e)).map((f) => (f.event === "content_block_delta" ? (f.data.delta as { type: string }).type : f.event));
  };
  t.same(kinds(false), ["content_block_start", "thinking_delta", "thinking_delta", "signature_delta", "content_block_stop", "content_block_start", "text_delta"]);
  t.same(kinds(true), ["content_block_start", "signature_delta", "content_block_stop", "content_block_start", "text_delta"]);
});
