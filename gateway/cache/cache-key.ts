// The exact cache's key (docs/guides/caching.md, "How a key is made"): the
// SHA-256 of a canonical form of everything in Troupe's internal request
// that changes the answer, plus the organization, environment and key kind.
// Every mount translates its body into the one internal request first
// (providers/chat-request.ts), so requests that mean the same on /v1,
// /openai/v1, /anthropic and /gemini share a key.
//
// Canonical: object keys sorted at every depth, -0 written as 0, absent,
// null, empty lists and the internal request's own defaults omitted (so an
// explicit default and its absence are one key). Provider defaults are NOT
// folded in (`temperature: 1` and no temperature stay two keys): the
// default differs between providers and the request may be routed to any.
// The stream flag is not part of the internal request, so a stream and a
// JSON call share a key.
import { hash } from "node:crypto";
import type { ChatMessage, ChatRequest } from "../../providers/chat-request.ts";
import type { RoutedEmbedRequest } from "../../providers/router.ts";
import type { CacheScope } from "./types.ts";

/** Which tenant asks, and with which kind of key (a test key may be answered by another provider than a live one). */
export interface KeyOwner extends CacheScope {
  live: boolean;
}

/** Bumped when the canonical form changes: old entries then simply stop matching. */
const keyVersion = 1;

/** The key of a chat request (hex SHA-256, 64 characters whatever the request's size). */
export function chatCacheKey(owner: KeyOwner, request: ChatRequest, category: string | undefined): string {
  return digest(owner, "chat", { category: category ?? "text", ...chatFields(request), messages: request.messages.map(canonicalMessage) });
}

/**
 * The semantic cache's "context digest": the chat key's canonical form with
 * the last user message taken out (its position kept), so two requests share
 * it only when everything but that message is the same — another
 * conversation's turn can never match. Undefined when there is no user message.
 */
export function chatContextDigest(owner: KeyOwner, request: ChatRequest, category: string | undefined): string | undefined {
  const last = lastUserIndex(request.messages);
  if (last < 0) return undefined;
  const messages = request.messages.map((m, i) => (i === last ? { role: "user", last_user_message: true } : canonicalMessage(m)));
  return digest(owner, "chat-context", { category: category ?? "text", ...chatFields(request), messages });
}

/** The key of an embeddings request. */
export function embeddingCacheKey(owner: KeyOwner, request: RoutedEmbedRequest): string {
  return digest(owner, "embedding", {
    model: request.model ?? undefined,
    routing_strategy: request.routing_strategy === "auto" ? undefined : request.routing_strategy,
    input: request.input,
    dimensions: request.dimensions ?? undefined,
    input_type: request.input_type,
  });
}

export function lastUserIndex(messages: readonly ChatMessage[]): number {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]?.role === "user") return i;
  return -1;
}

/**
 * Every field of the internal request and whether it is in the key. Typed
 * over the request's keys: a field added to ChatRequest does not compile
 * until it is decided here (and in docs/guides/caching.md's table).
 */
export const chatKeyFields = {
  messages: "key",
  model: "key",
  routing_strategy: "key",
  max_tokens: "key",
  temperature: "key",
  tools: "key",
  tool_choice: "key",
  top_p: "key",
  stop: "key",
  seed: "key",
  response_format: "key",
  reasoning: "key",
  hints: "key",
  // Prompt-cache breakpoints change what the provider charges, not what it answers.
  prompt_cache: "omitted",
} as const satisfies Record<keyof Required<ChatRequest>, "key" | "omitted">;

type KeyedField = { [K in keyof typeof chatKeyFields]: (typeof chatKeyFields)[K] extends "key" ? K : never }[keyof typeof chatKeyFields];

/** The answer-changing fields besides the messages (chatKeyFields), each with its defaults folded in. */
function chatFields(r: ChatRequest): Record<Exclude<KeyedField, "messages">, unknown> {
  return {
    model: r.model ?? undefined,
    // "auto" is the internal request's default (absent means auto).
    routing_strategy: r.routing_strategy === "auto" ? undefined : r.routing_strategy,
    max_tokens: r.max_tokens ?? undefined,
    temperature: r.temperature ?? undefined,
    top_p: r.top_p ?? undefined,
    seed: r.seed ?? undefined,
    // Stop sequences are a set: order and repeats do not change the answer.
    stop: r.stop && r.stop.length > 0 ? [...new Set(r.stop)].sort() : undefined,
    response_format: r.response_format,
    reasoning: r.reasoning,
    tools: r.tools && r.tools.length > 0 ? r.tools.map((t) => ({ name: t.name, description: t.description || undefined, parameters: t.parameters })) : undefined,
    // "auto" is what every provider does when tools are given and the choice is not.
    tool_choice: r.tool_choice === "auto" ? undefined : (r.tool_choice ?? undefined),
    // Tuning hints (penalties, logit_bias, verbosity…): a provider that takes them answers differently.
    hints: r.hints && Object.values(r.hints).some((v) => v !== undefined) ? r.hints : undefined,
  };
}

/**
 * A message's answer-changing parts. Left out: `id` (an item id names the
 * message, it does not change what it says) and `cache` (a prompt-cache
 * breakpoint changes the provider's price, not the answer).
 */
function canonicalMessage(m: ChatMessage): Record<string, unknown> {
  return {
    role: m.role,
    content: m.content,
    tool_calls: m.tool_calls && m.tool_calls.length > 0 ? m.tool_calls : undefined,
    tool_call_id: m.tool_call_id ?? undefined,
    images: m.images && m.images.length > 0 ? m.images : undefined,
    reasoning: m.reasoning && m.reasoning.length > 0 ? m.reasoning : undefined,
  };
}

function digest(owner: KeyOwner, kind: string, request: Record<string, unknown>): string {
  const form = { v: keyVersion, kind, org: owner.organization_id, env: owner.environment_id, live: owner.live, request };
  // One-shot hash: no Hash object per key.
  return hash("sha256", canonicalJson(form), "hex");
}

/** A string JSON.stringify writes as itself between quotes: nothing to escape, no surrogate (a lone one would be escaped). Anchored and negated: one greedy pass, ~4x faster than searching for a character to escape. */
const plainText = /^[^"\\\u0000-\u001f\ud800-\udfff]*$/;

/**
 * JSON with sorted keys at every depth, undefined members dropped, -0 as 0.
 * A null inside the caller's data (a tool argument, a schema) is kept: it
 * says something there; the fields above map their null to absent themselves.
 * Written into one list of parts joined once, and plain text quoted without
 * JSON.stringify's escaping pass (the key is computed on every cached call,
 * hit or miss) — byte for byte what JSON.stringify with sorted keys would
 * write, so stored keys keep matching (pinned in the key's test).
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  write(value, out);
  return out.join("");
}

function write(value: unknown, out: string[]): void {
  if (value === null || value === undefined) {
    out.push("null");
  } else if (typeof value === "string") {
    if (plainText.test(value)) out.push('"', value, '"');
    else out.push(JSON.stringify(value));
  } else if (typeof value === "number") {
    out.push(Object.is(value, -0) ? "0" : JSON.stringify(value));
  } else if (typeof value !== "object") {
    out.push(String(JSON.stringify(value)));
  } else if (Array.isArray(value)) {
    out.push("[");
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out.push(",");
      write(value[i], out);
    }
    out.push("]");
  } else {
    const record = value as Record<string, unknown>;
    // Default sort: UTF-16 code unit order, as the comparison of two keys with < and >.
    const keys = Object.keys(record).sort();
    out.push("{");
    let first = true;
    for (const k of keys) {
      const v = record[k];
      if (v === undefined) continue;
      out.push(first ? "" : ",", JSON.stringify(k), ":");
      first = false;
      write(v, out);
    }
    out.push("}");
  }
}
