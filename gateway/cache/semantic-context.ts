// What the semantic cache compares: a request splits into its *context* —
// everything but the last user message's text (model and routing choice,
// system prompt, earlier turns, tools, sampling parameters) — and that last
// message. Two requests may share an answer only when their contexts are
// identical (same digest) and their last messages mean the same thing, so a
// turn of one conversation is never answered from another conversation's.
// Requests whose answer depends on more than wording are refused here,
// before anything is embedded (docs/guides/caching.md, "Semantic cache").
import type { ChatRequest } from "../../providers/chat-request.ts";
import { chatContextDigest, type KeyOwner } from "./cache-key.ts";

/** Last messages longer than this are exact-only: a semantic cache is for short questions, and a long prompt's meaning hides in details a vector blurs. */
export const SEMANTIC_MAX_MESSAGE_CHARS = 4096;

/** Why a request is never looked up (or stored) semantically; the exact cache still serves it. */
export type SemanticIneligibility =
  /** A `tool` message: the answer depends on a tool's output, which wording similarity says nothing about. */
  | "tool_message"
  /** The last message is not the user's (an assistant prefill, a tool result). */
  | "last_not_user"
  /** The last user message carries images: their content is not in its text. */
  | "images"
  /** A response_format: structured output is mostly extraction from the message's exact data (names, numbers). */
  | "structured_output"
  | "empty_message"
  | "message_too_long";

export interface SemanticContext {
  /** sha256 (hex) of the canonical form of everything but the last user message, and of the organization and environment. */
  digest: string;
  /** The last user message's text, the one that gets embedded. */
  lastUserMessage: string;
}

export type SemanticSplit = { eligible: true; context: SemanticContext } | { eligible: false; reason: SemanticIneligibility };

/**
 * Splits a request into context and last user message, or says why it is not
 * semantically cacheable. The context digest is the exact key's canonical
 * form without the last user message (cache-key.ts), of the owner's
 * organization and environment: one canonical form for both caches.
 */
export function semanticContext(owner: KeyOwner, request: ChatRequest, category: string | undefined): SemanticSplit {
  const { messages } = request;
  if (messages.some((m) => m.role === "tool")) return { eligible: false, reason: "tool_message" };
  const last = messages[messages.length - 1];
  if (!last || last.role !== "user") return { eligible: false, reason: "last_not_user" };
  if (last.images && last.images.length > 0) return { eligible: false, reason: "images" };
  if (request.response_format !== undefined) return { eligible: false, reason: "structured_output" };
  if (last.content.trim().length === 0) return { eligible: false, reason: "empty_message" };
  if (last.content.length > SEMANTIC_MAX_MESSAGE_CHARS) return { eligible: false, reason: "message_too_long" };
  const digest = chatContextDigest(owner, request, category);
  if (digest === undefined) return { eligible: false, reason: "last_not_user" };
  return { eligible: true, context: { digest, lastUserMessage: last.content } };
}
