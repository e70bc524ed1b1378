// The conversation cap's quick bound (actors/conversation/conversation-size.ts)
// must never read less than the exact size, whatever the text: if it did, a
// message could pass AGENT_CONVERSATION_MAX_BYTES without the exact check.
import t from "tap";
import { agentMessage, conversationData } from "../support/conversation-data.ts";
import { conversationBytes, conversationBytesAtMost } from "../../actors/conversation/conversation-size.ts";
import type { AgentMessage, ConversationData } from "../../actors/conversation/types.ts";

const conversation = (messages: AgentMessage[], systemPrompt?: string): ConversationData =>
  conversationData(systemPrompt === undefined ? { messages } : { messages, system_prompt: systemPrompt });

const message = agentMessage;

/** Text JSON makes longest per UTF-16 unit, and text it does not grow at all. */
const texts: Record<string, string> = {
  "control characters (\\u0001: six bytes each)": "\u0001".repeat(500),
  "lone surrogates (\\udc00: six bytes each)": "\udc00".repeat(500),
  "quotes and backslashes": '"\\'.repeat(250),
  "three-byte characters": "€".repeat(500),
  "emoji (surrogate pairs)": "🎬".repeat(250),
  "plain ASCII": "x".repeat(500),
  empty: "",
};

for (const [name, text] of Object.entries(texts)) {
  t.test(`the bound is at least the exact size: ${name}`, async (t) => {
    const data = conversation([
      message(text),
      message("", { role: "assistant", tool_calls: [{ id: "call_1", name: "lookup", arguments: { q: text, nested: { deep: [text] } } }] }),
      message(text, { role: "tool", tool_call_id: `call_${text}` }),
    ], text);
    const exact = conversationBytes(data);
    const bound = conversationBytesAtMost(data);
    t.ok(bound >= exact, `bound ${bound} ≥ exact ${exact}`);
  });
}

t.test("the bound stays within a small multiple of the exact size, so a conversation far from its cap is never serialized", async (t) => {
  const data = conversation(Array.from({ length: 40 }, (_, i) => message(`message ${i}: ${"lorem ipsum ".repeat(20)}`)));
  const exact = conversationBytes(data);
  const bound = conversationBytesAtMost(data);
  t.ok(bound <= 6 * exact, `bound ${bound} ≤ 6 × exact ${exact}`);
});

t.test("an empty conversation: the bound counts the brackets and the prompt", async (t) => {
  const data = conversation([], "€");
  t.equal(conversationBytes(data), 5);
  t.ok(conversationBytesAtMost(data) >= 5);
});
