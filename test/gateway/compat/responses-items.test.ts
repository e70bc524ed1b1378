// The translation at the heart of the Responses API, without a host:
// a provider's thinking blocks (an Anthropic signature, a Gemini thought
// signature, redacted thinking) become reasoning items whose
// encrypted_content carries them, and those items sent back (by a client,
// or from the store) become the assistant turn's ChatMessage.reasoning again,
// so multi-turn tool use works on every provider; the stream yields the
// thinking as reasoning summary events and the same items.
import t from "tap";
import type { FieldIssue } from "../../../core/errors.ts";
import type { ReasoningBlock } from "../../../providers/types.ts";
import { itemPlace, itemsToMessages } from "../../../gateway/compat/openai/responses/items.ts";
import { inputItem } from "../../../gateway/compat/openai/responses/request.ts";
import { outputItems, type ModelOutput } from "../../../gateway/compat/openai/responses/response-object.ts";
import { ResponseEventStream } from "../../../gateway/compat/openai/responses/stream.ts";

const ulid = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
const blocks: ReasoningBlock[] = [
  { provider: "anthropic", text: "The user wants weather.", signature: "sig-anthropic-123" },
  { provider: "anthropic", text: "", redacted: "opaque-redacted-data" },
];
const out: ModelOutput = {
  content: "Let me check.",
  tool_calls: [{ id: "toolu_1", name: "get_weather", arguments: { city: "Paris" } }],
  reasoning: blocks,
  finish_reason: "tool_calls",
  model: "claude-haiku-4-5",
  input_tokens: 10,
  output_tokens: 5,
};

/** Items as a client sends them back: through JSON and the request schema. */
const asInput = (items: unknown[]) => items.map((i) => inputItem.parse(JSON.parse(JSON.stringify(i))));

t.test("thinking blocks go out as reasoning items and come back as the assistant turn's reasoning", async (t) => {
  const items = outputItems(ulid, out);
  t.same(items.map((i) => i.type), ["reasoning", "reasoning", "message", "function_call"]);
  t.match(items[0], { id: `rs_${ulid}_0`, summary: [{ type: "summary_text", text: "The user wants weather." }], encrypted_content: /^[A-Za-z0-9_-]+$/ });
  t.same(itemPlace(String(items[3]!.id)), { responseId: `resp_${ulid}`, input: false, position: 3 }, "an item id names its response");
  const issues: FieldIssue[] = [];
  const { messages } = itemsToMessages(asInput([{ role: "user", content: "Weather?" }, ...items, { type: "function_call_output", call_id: "toolu_1", output: "sunny" }]), "input", issues);
  t.same(issues, []);
  t.equal(messages.length, 3, "user, one assistant turn, the tool result");
  t.same(messages[1], { role: "assistant", content: "Let me check.", tool_calls: out.tool_calls, reasoning: blocks }, "the blocks exactly, signatures and redacted data included");
  t.same(messages[2], { role: "tool", content: "sunny", tool_call_id: "toolu_1" });
});

t.test("reasoning without Troupe's encoding (none, or foreign) is dropped, not sent to a provider", async (t) => {
  const issues: FieldIssue[] = [];
  const { messages } = itemsToMessages(
    asInput([
      { type: "reasoning", id: "rs_x", summary: [{ type: "summary_text", text: "thought" }] },
      { type: "reasoning", id: "rs_y", summary: [], encrypted_content: "gAAAAB-not-ours" },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "hi" }] },
    ]),
    "input",
    issues,
  );
  t.same(messages, [{ role: "assistant", content: "hi", tool_calls: null }]);
});

t.test("the stream: thinking deltas as reasoning summary events, the block's item with its encrypted_content", async (t) => {
  const stream = new ResponseEventStream(ulid);
  const events = [
    ...stream.events({ reasoning_delta: "The user " }),
    ...stream.events({ reasoning_delta: "wants weather." }),
    ...stream.events({ reasoning_block: { provider: "gemini", text: "", signature: "thought-sig" } }),
    ...stream.events({ delta: "Let me check." }),
    ...stream.events({ tool_call: { id: "call_1", name: "get_weather", arguments: { city: "Paris" } } }),
    ...stream.events({ finish_reason: "tool_calls", input_tokens: 3, output_tokens: 4, model: "gemini-2.5-flash", provider: "gemini" }),
  ];
  t.same(
    events.map((e) => e.type),
    [
      "response.output_item.added",
      "response.reasoning_summary_part.added",
      "response.reasoning_summary_text.delta",
      "response.reasoning_summary_text.delta",
      "response.reasoning_summary_text.done",
      "response.reasoning_summary_part.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.done",
      "response.output_item.done",
    ],
  );
  t.same(events.map((e) => e.sequence_number), events.map((_, i) => i));
  const done = stream.output({ finish_reason: "tool_calls", input_tokens: 3, output_tokens: 4, model: "gemini-2.5-flash" });
  t.same(done.reasoning, [{ provider: "gemini", text: "The user wants weather.", signature: "thought-sig" }], "the streamed text with the block's signature");
  const issues: FieldIssue[] = [];
  const { messages } = itemsToMessages(asInput(stream.items), "input", issues);
  t.same(messages, [{ role: "assistant", content: "Let me check.", tool_calls: [{ id: "call_1", name: "get_weather", arguments: { city: "Paris" } }], reasoning: done.reasoning }]);
});
