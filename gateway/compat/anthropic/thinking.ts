// Thinking blocks ⇄ Troupe's ReasoningBlock. Anthropic's own blocks pass
// unchanged (their signature is Anthropic's, checked by Anthropic when it
// comes back). Another provider's thinking (a Gemini thought signature) is
// shown as a thinking block too, its signature wrapping the provider's name
// and its own signature, so that when a client returns the block (as
// Claude Code returns every earlier turn) it goes back to the provider that
// made it, and to no other.
import { invalidRequest } from "../../../core/errors.ts";
import type { ReasoningBlock } from "../../../providers/types.ts";

/** What starts a signature this mount wrapped; Anthropic's signatures are base64 and never contain ".". */
const wrappedPrefix = "troupe.";

interface Wrapped {
  /** The provider that made the block. */
  p: string;
  /** Its signature, if it had one. */
  s?: string | undefined;
  /** Its redacted data, if redacted. */
  r?: string | undefined;
}

function wrap(block: ReasoningBlock): string {
  const wrapped: Wrapped = { p: block.provider, s: block.signature, r: block.redacted };
  return wrappedPrefix + Buffer.from(JSON.stringify(wrapped)).toString("base64url");
}

function unwrap(value: string, path: string): Wrapped {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(value.slice(wrappedPrefix.length), "base64url").toString("utf8"));
  } catch {
    parsed = undefined;
  }
  const w = parsed as Partial<Wrapped> | undefined;
  if (typeof w !== "object" || w === null || typeof w.p !== "string" || (w.s !== undefined && typeof w.s !== "string") || (w.r !== undefined && typeof w.r !== "string")) {
    throw invalidRequest([{ path, message: "not a signature this API gave (return thinking blocks unchanged)" }]);
  }
  return { p: w.p, s: w.s, r: w.r };
}

export type ThinkingBlock = { type: "thinking"; thinking: string; signature: string } | { type: "redacted_thinking"; data: string };

/** How an answer shows one block of thinking. */
export function toThinkingBlock(block: ReasoningBlock): ThinkingBlock {
  const ownsIt = block.provider === "anthropic";
  if (block.redacted !== undefined) return { type: "redacted_thinking", data: ownsIt ? block.redacted : wrap(block) };
  return { type: "thinking", thinking: block.text, signature: ownsIt && block.signature !== undefined ? block.signature : wrap(block) };
}

/** A thinking block a client sent back, as the ReasoningBlock it was made from (`path` names it in a 400). */
export function fromThinkingBlock(block: ThinkingBlock, path: string): ReasoningBlock {
  if (block.type === "redacted_thinking") {
    if (!block.data.startsWith(wrappedPrefix)) return { provider: "anthropic", text: "", redacted: block.data };
    const w = unwrap(block.data, `${path}.data`);
    return { provider: w.p, text: "", ...(w.s !== undefined ? { signature: w.s } : {}), ...(w.r !== undefined ? { redacted: w.r } : {}) };
  }
  if (!block.signature.startsWith(wrappedPrefix)) return { provider: "anthropic", text: block.thinking, signature: block.signature };
  const w = unwrap(block.signature, `${path}.signature`);
  return { provider: w.p, text: block.thinking, ...(w.s !== undefined ? { signature: w.s } : {}), ...(w.r !== undefined ? { redacted: w.r } : {}) };
}
