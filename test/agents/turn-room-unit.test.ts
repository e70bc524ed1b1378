// A conversation's room under its cap (actors/conversation/turn-room.ts) and
// the size bound it starts from (actors/conversation/conversation-size.ts),
// in process:
// - fits: exactly at the cap less the closing reserve (or at the cap for the
//   closing message itself) it fits, one byte past it does not; the quick
//   bound is replaced by the exact size only when it comes near the cap;
// - took adds exactly a message's appended bytes; size and left answer the
//   exact figures, left never below 0;
// - an answer's reserve is a not-added answer with the longest id the actor
//   makes, naming the cap;
// - the quick bound is never below the exact size, for every role, empty
//   contents, JSON's longest escapes, and tool calls.
import t from "tap";
import { agentMessage, conversationData } from "../support/conversation-data.ts";
import { appendedBytes, conversationBytes, conversationBytesAtMost } from "../../actors/conversation/conversation-size.ts";
import { capNotice, closingReserveBytes, ConversationRoom, notAddedAnswer } from "../../actors/conversation/turn-room.ts";
import type { AgentMessage, ConversationData } from "../../actors/conversation/types.ts";

const conversation = (messages: AgentMessage[], systemPrompt = "Be terse."): ConversationData => conversationData({ messages, system_prompt: systemPrompt });

const message = (role: AgentMessage["role"], content: string, over: Partial<AgentMessage> = {}): AgentMessage => agentMessage(content, { role, ...over });

t.test("fits: exactly up to the cap less the closing reserve, or the cap itself for the closing message", async (t) => {
  const data = conversation([message("user", "hello there")]);
  const exact = conversationBytes(data);
  const max = exact + closingReserveBytes + 500;
  t.equal(new ConversationRoom(data, max).fits(500), true, "exactly the room left");
  t.equal(new ConversationRoom(data, max).fits(501), false, "one byte past it");
  t.equal(new ConversationRoom(data, max).fits(500 + closingReserveBytes, true), true, "the closing message may take the reserve");
  t.equal(new ConversationRoom(data, max).fits(501 + closingReserveBytes, true), false, "but not one byte more");
  const room = new ConversationRoom(data, max);
  t.equal(room.fits(501), false);
  t.equal(room.fits(500), true, "still right once the exact size is known");
});

t.test("the quick bound answers far from the cap; near it the exact size decides", async (t) => {
  const data = conversation([message("user", "x".repeat(1000))]);
  const bound = conversationBytesAtMost(data);
  const exact = conversationBytes(data);
  t.ok(bound > exact + 1000, "the bound is loose for plain text");
  // A cap between the two: the bound says no, the exact size yes.
  const max = exact + closingReserveBytes + 10;
  t.equal(new ConversationRoom(data, max).fits(10), true);
  t.equal(new ConversationRoom(data, max).fits(11), false);
  // Far from the cap: yes without serializing (a history that would throw if serialized is never read).
  const cyclic = conversation([message("user", "hi")]);
  const far = new ConversationRoom(cyclic, 1_000_000);
  Object.defineProperty(cyclic.messages[0]!, "toJSON", { value: () => { throw new Error("serialized"); } });
  t.equal(far.fits(10), true, "answered from the bound");
});

t.test("took, size and left count exactly", async (t) => {
  const data = conversation([message("user", "hello")]);
  const max = 5000;
  const room = new ConversationRoom(data, max);
  t.equal(room.size(), conversationBytes(data));
  t.equal(room.size(), conversationBytes(data), "asked twice: the same");
  const added = message("assistant", "a reply with some words");
  data.messages.push(added);
  room.took(added);
  t.equal(room.size(), conversationBytes(data), "took added the appended bytes");
  t.equal(appendedBytes(added), Buffer.byteLength(JSON.stringify(added)) + 1);
  t.equal(room.left(), max - closingReserveBytes - conversationBytes(data));
  const fresh = new ConversationRoom(data, max);
  t.equal(fresh.left(), max - closingReserveBytes - conversationBytes(data), "left serializes once when the size is not known yet");
  t.equal(new ConversationRoom(data, 100).left(), 0, "never below 0");
});

t.test("an answer's reserve: a not-added answer with the longest id the actor makes", async (t) => {
  const room = new ConversationRoom(conversation([]), 4_194_304);
  const longest = message("tool", notAddedAnswer(4_194_304), { id: "0".repeat(64), tool_call_id: "call_1" });
  t.equal(room.answerBytes("call_1"), appendedBytes(longest));
  const uuid = message("tool", notAddedAnswer(4_194_304), { tool_call_id: "call_1" });
  t.ok(room.answerBytes("call_1") >= appendedBytes(uuid), "covers an answer under a UUID");
  t.equal(room.answerBytes("call_12") - room.answerBytes("call_1"), 1, "the call's id counts");
  t.match(notAddedAnswer(4_194_304), /cap of 4194304 bytes/);
  t.match(capNotice(99, "a tool result (7 bytes)"), /cap of 99 bytes, so this turn stopped: a tool result \(7 bytes\) did not fit/);
});

t.test("the quick bound is never below the exact size", async (t) => {
  const calls = [{ id: "c1", name: "lookup", arguments: { q: "a\u0001" } }];
  const cases: Array<[string, AgentMessage[], string]> = [
    ["empty user", [message("user", "", { id: "" })], ""],
    ["empty assistant", [message("assistant", "", { id: "" })], ""],
    ["empty tool", [message("tool", "", { id: "", tool_call_id: "" })], ""],
    ["escapes", [message("user", "\u0001\u001f\udc00".repeat(50))], "\u0001"],
    ["tool calls", [message("assistant", "", { tool_calls: calls }), message("tool", "{}", { tool_call_id: "c1" })], ""],
    ["many", Array.from({ length: 20 }, (_, i) => message(i % 2 ? "assistant" : "user", "é".repeat(i))), "sys"],
  ];
  for (const [name, messages, prompt] of cases) {
    const data = conversation(messages, prompt);
    t.ok(conversationBytesAtMost(data) >= conversationBytes(data), `${name}: ${conversationBytesAtMost(data)} ≥ ${conversationBytes(data)}`);
  }
});
