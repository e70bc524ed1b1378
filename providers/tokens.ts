// Token counting approximation used where no upstream count exists (the
// simulated provider): one token per word (a run of letters/digits/_) and one
// per punctuation or symbol character. Real BPE tokenizers give roughly the
// same count for English prose (±25 %), and the count is stable and honest:
// the same text always counts the same, and streamed pieces sum to it.
import type { ChatMessage } from "./chat-request.ts";
import type { ToolDefinition } from "./types.ts";

const tokenPattern = /[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_]/gu;
/** The same tokens, each with its leading whitespace, so pieces concatenate to the text. */
const piecePattern = /\s*(?:[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_])/gu;

// Conversations resend the same history and tool declarations on every
// model call: remembering recent counts keeps the Unicode regex off the hot
// path. Bounded; cleared when full.
const memo = new Map<string, number>();
const memoMax = 20_000;
const memoMinLength = 24;

export function countTokens(text: string): number {
  if (text.length >= memoMinLength) {
    const known = memo.get(text);
    if (known !== undefined) return known;
  }
  let n = 0;
  tokenPattern.lastIndex = 0;
  while (tokenPattern.exec(text) !== null) n++;
  if (text.length >= memoMinLength) {
    if (memo.size >= memoMax) memo.clear();
    memo.set(text, n);
  }
  return n;
}

/** Splits text into streamable pieces: one token each, whitespace kept, joining back to `text` (trailing whitespace goes on the last piece). */
export function tokenPieces(text: string): string[] {
  const pieces = text.match(piecePattern) ?? [];
  const joinedLength = pieces.reduce((n, p) => n + p.length, 0);
  if (joinedLength < text.length) {
    const tail = text.slice(joinedLength);
    if (pieces.length === 0) return [tail];
    pieces[pieces.length - 1] += tail;
  }
  return pieces;
}

/** Input tokens of a conversation: message contents, tool calls and tool declarations, plus 3 per message for role framing. */
export function countChatInputTokens(messages: ChatMessage[], tools?: ToolDefinition[] | null): number {
  let n = 0;
  for (const m of messages) {
    n += 3 + countTokens(m.content);
    if (m.tool_calls) n += countTokens(JSON.stringify(m.tool_calls));
    // An image costs a fixed 85 tokens, OpenAI's "low detail" price.
    if (m.images) n += 85 * m.images.length;
  }
  if (tools) n += countToolTokens(tools);
  return n;
}

// An agent offers the same tool objects on every model call of a turn (the
// built-in ones on every call of every turn): counted once per object, the
// declarations are not serialised again per call. This keys on the object,
// so a tool definition must not be changed once made: every request and
// every conversation state is parsed into new objects, and nothing edits them.
const toolTokens = new WeakMap<ToolDefinition, number>();

/**
 * `countTokens(JSON.stringify(tools))`, exactly: the brackets and each comma
 * between two tools are one token apiece, and a tool's JSON begins and ends
 * with a brace, so no word runs across two tools.
 */
export function countToolTokens(tools: readonly ToolDefinition[]): number {
  let n = 2 + Math.max(0, tools.length - 1);
  for (const tool of tools) {
    let own = toolTokens.get(tool);
    if (own === undefined) {
      own = countTokens(JSON.stringify(tool));
      toolTokens.set(tool, own);
    }
    n += own;
  }
  return n;
}
