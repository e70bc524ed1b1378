// The simulated provider's token counts (providers/tokens.ts):
// - tool declarations count exactly as their whole JSON array would, for
//   none, one and many tools, whatever their names, descriptions and schemas
//   (words and digits at the edges, Unicode, nested schemas);
// - a tool is counted once per object, and another object is counted for
//   its own content;
// - a conversation's input tokens: 3 per message, its content, its tool
//   calls, 85 per image, and the tools.
import t from "tap";
import type { ChatMessage } from "../../providers/chat-request.ts";
import { countChatInputTokens, countTokens, countToolTokens } from "../../providers/tokens.ts";
import type { ToolDefinition } from "../../providers/types.ts";

const tool = (name: string, description = "", parameters: Record<string, unknown> = { type: "object", properties: {} }): ToolDefinition => ({ name, description, parameters });

const tools: ToolDefinition[] = [
  tool("a"),
  tool("lookup_order", "Looks an order up by its number 42", { type: "object", properties: { id: { type: "string", description: "the order's id" } }, required: ["id"] }),
  tool("x9", "Ünïcödé ☃ and 日本語 words"),
  tool("nested", "", { type: "object", properties: { items: { type: "array", items: { type: "object", properties: { n: { type: "integer", minimum: 0 } } } } } }),
  tool("trailing_9", "ends in a digit 9"),
];

t.test("tool declarations count as their whole JSON array", async (t) => {
  for (let n = 0; n <= tools.length; n++) {
    const some = tools.slice(0, n);
    t.equal(countToolTokens(some), countTokens(JSON.stringify(some)), `${n} tools`);
  }
  const reversed = [...tools].reverse();
  t.equal(countToolTokens(reversed), countTokens(JSON.stringify(reversed)), "in another order");
  t.equal(countToolTokens([]), 2, "[] is two tokens");
});

t.test("a tool is counted once per object, and another object for its own content", async (t) => {
  const one = tool("same_name", "first description");
  const first = countToolTokens([one]);
  t.equal(countToolTokens([one]), first, "the same object again");
  t.equal(countToolTokens([one, one]), 2 + 1 + 2 * (first - 2), "twice in one array");
  const other = tool("same_name", "a longer second description with more words");
  t.equal(countToolTokens([other]), countTokens(JSON.stringify([other])));
  t.not(countToolTokens([other]), first, "not the first object's count");
});

t.test("a conversation's input tokens: framing, contents, tool calls, images and tools", async (t) => {
  const calls = [{ id: "c1", name: "lookup_order", arguments: { id: "A-1" } }];
  const messages: ChatMessage[] = [
    { role: "system", content: "Be terse." },
    { role: "user", content: "Where is my order?", images: [{ url: "https://example.com/a.png" }, { url: "https://example.com/b.png" }] },
    { role: "assistant", content: "", tool_calls: calls },
    { role: "tool", content: '{"status":"shipped"}', tool_call_id: "c1" },
  ];
  const expected =
    4 * 3 + countTokens("Be terse.") + countTokens("Where is my order?") + 2 * 85 + countTokens(JSON.stringify(calls)) + countTokens('{"status":"shipped"}');
  t.equal(countChatInputTokens(messages), expected, "without tools");
  t.equal(countChatInputTokens(messages, null), expected, "tools null");
  t.equal(countChatInputTokens(messages, tools), expected + countTokens(JSON.stringify(tools)), "with tools");
  t.equal(countChatInputTokens([], []), 2, "no message, an empty tool list");
});
