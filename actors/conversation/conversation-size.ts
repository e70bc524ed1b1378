// How many bytes a conversation holds, for AGENT_CONVERSATION_MAX_BYTES:
// its messages and system prompt as JSON (UTF-8). Checked on every message
// and tool output, so the check first asks a bound that reads each string's
// length instead of serializing the whole history; only a conversation near
// its cap is serialized.
import type { AgentMessage, ConversationData } from "./types.ts";

/** Bytes of the conversation as it is kept and sent: its messages and system prompt as JSON (UTF-8). */
export function conversationBytes(data: ConversationData): number {
  return Buffer.byteLength(data.system_prompt) + Buffer.byteLength(JSON.stringify(data.messages));
}

/** What appending `message` to a conversation that has messages adds: its JSON and the comma before it. */
export function appendedBytes(message: AgentMessage): number {
  return Buffer.byteLength(JSON.stringify(message)) + 1;
}

/**
 * JSON writes one UTF-16 unit of a string as at most 6 bytes (`\u001f`; a
 * lone surrogate as `\udc00`; other text 1–3 bytes, a surrogate pair 4).
 */
const maxBytesPerUnit = 6;

/** A message's keys, quotes, nulls and the comma after it: 71 bytes, rounded up. */
const messageFrameBytes = 80;

/** Never less than conversationBytes(data): tool calls (small, and rare) are measured, text is bounded. */
export function conversationBytesAtMost(data: ConversationData): number {
  let bytes = Buffer.byteLength(data.system_prompt) + 2;
  for (const m of data.messages) bytes += messageBytesAtMost(m);
  return bytes;
}

function messageBytesAtMost(m: AgentMessage): number {
  const text = m.id.length + m.role.length + m.content.length + (m.tool_call_id?.length ?? 0);
  const calls = m.tool_calls === null ? 0 : Buffer.byteLength(JSON.stringify(m.tool_calls));
  return messageFrameBytes + maxBytesPerUnit * text + calls;
}
