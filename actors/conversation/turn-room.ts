// Room left in a conversation under AGENT_CONVERSATION_MAX_BYTES, for the
// caller's messages and for what a turn appends itself: the model's answers
// and every tool result. Counting only the caller's messages let seven
// search_memory calls (top_k 100 over 32 KB records) grow one conversation
// to 45 MB in a single turn.
//
// A turn that reaches the cap stops there, as a caller's message is refused
// there: the content that does not fit is not added, every tool call of the
// step is answered (a provider refuses a history with an unanswered call),
// and an assistant message says why. So each call's answer is reserved when
// the model's message that makes it is taken, and `closingReserveBytes` is
// held back from everything else for the message the turn ends with.
import { appendedBytes, conversationBytes, conversationBytesAtMost } from "./conversation-size.ts";
import type { AgentMessage, ConversationData } from "./types.ts";

/**
 * 1 KiB, kept below the cap for the assistant message a turn ends with (the
 * cap's notice below, or the step limit's): each is under 400 bytes.
 */
export const closingReserveBytes = 1024;

/** A message id as long as any the actor makes (a UUID is 36 characters), for sizing answers before their id exists. */
const idPlaceholder = "0".repeat(64);

/** The answer to a tool call the turn could not add: its result, or the call itself, left out at the cap. */
export function notAddedAnswer(maxBytes: number): string {
  return JSON.stringify({ error: `not added: the conversation reached its cap of ${maxBytes} bytes; start a new conversation` });
}

/** The assistant message a turn ends with at the cap; `what` says what did not fit. */
export function capNotice(maxBytes: number, what: string): string {
  return `The conversation reached its cap of ${maxBytes} bytes, so this turn stopped: ${what} did not fit. Start a new conversation to go on.`;
}

/**
 * The bytes of a conversation as it grows, checked against its cap. It
 * starts from the quick bound (conversation-size.ts) and serializes the
 * history only when the bound comes near the cap; each message appended then
 * adds its own exact size.
 */
export class ConversationRoom {
  readonly maxBytes: number;
  private readonly data: ConversationData;
  private bytes: number;
  private exact = false;

  constructor(data: ConversationData, maxBytes: number) {
    this.data = data;
    this.maxBytes = maxBytes;
    this.bytes = conversationBytesAtMost(data);
  }

  /** Whether `adding` more bytes leave the closing reserve free (`closing`: whether they fit at all, for the closing message itself). */
  fits(adding: number, closing = false): boolean {
    const limit = closing ? this.maxBytes : this.maxBytes - closingReserveBytes;
    if (this.bytes + adding <= limit) return true;
    if (this.exact) return false;
    this.bytes = conversationBytes(this.data);
    this.exact = true;
    return this.bytes + adding <= limit;
  }

  /** The exact size now (serializes the history once, if not yet). */
  size(): number {
    if (!this.exact) {
      this.bytes = conversationBytes(this.data);
      this.exact = true;
    }
    return this.bytes;
  }

  /** Room left before the closing reserve, in bytes (for a refusal's details). */
  left(): number {
    return Math.max(0, this.maxBytes - closingReserveBytes - this.size());
  }

  /** Counts a message just appended to the conversation. */
  took(message: AgentMessage): void {
    this.bytes += appendedBytes(message);
  }

  /** The bytes held for answering the tool call `toolCallId` with `notAddedAnswer` if its result cannot be added. */
  answerBytes(toolCallId: string): number {
    return appendedBytes({ id: idPlaceholder, role: "tool", content: notAddedAnswer(this.maxBytes), tool_calls: null, tool_call_id: toolCallId });
  }
}
