// The one rule for every field of OpenAI's chat.completions request that
// Troupe's chat request has no place for (docs/guides/compat-fields.md):
// - a field that changes only how the provider works is accepted, not sent,
//   and named in the troupe-ignored-params header (ignorableChatFields);
// - a field that changes what the answer is (more choices, log
//   probabilities, audio, a web search) is honoured or refused: routing may
//   pick only models that honour it, and when none does it is a 400 naming
//   the field (answerChangingNeeds).
// Fields Troupe does carry (reasoning_effort, max_completion_tokens, stop,
// seed, response_format…) are translated in chat-request.ts; fields unknown
// to OpenAI's API are refused by its strict schema.
import type { FieldNeed, ModelEntry } from "../../../providers/catalogue.ts";
import type { ProviderHints } from "../../../providers/chat-request.ts";
import { hintsNotTaken, hintsSet } from "../../../providers/provider-hints.ts";
import type { OpenAiChatRequest } from "./chat-request.ts";

/**
 * Accepted and not sent on, to any provider, in the header's order. The
 * tuning hints (parallel_tool_calls, verbosity, the penalties, logit_bias)
 * are not here: they are sent to the providers that take them and named
 * after these only for the others (ignoredHints).
 */
export const ignorableChatFields = [
  "store",
  "metadata",
  "service_tier",
  "user",
  "safety_identifier",
  "prompt_cache_key",
  "prompt_cache_retention",
  "prompt_cache_options",
  "prediction",
  "moderation",
] as const;

/** The body's tuning hints, as Troupe's chat request carries them (undefined when it sets none). */
export function hintsOf(body: OpenAiChatRequest): ProviderHints | undefined {
  const hints: ProviderHints = {};
  if (body.parallel_tool_calls != null) hints.parallel_tool_calls = body.parallel_tool_calls;
  if (body.verbosity != null) hints.verbosity = body.verbosity;
  if (body.presence_penalty != null) hints.presence_penalty = body.presence_penalty;
  if (body.frequency_penalty != null) hints.frequency_penalty = body.frequency_penalty;
  if (body.logit_bias != null) hints.logit_bias = body.logit_bias;
  return hintsSet(hints).length > 0 ? hints : undefined;
}

/**
 * The hints the model that served (or, for a stream whose header leaves
 * before the answer says who served it, the model routing tries first) did
 * not take. Unknown: every hint set is named.
 */
export function ignoredHints(hints: ProviderHints | undefined, served: { provider: string; id: string } | undefined): string[] {
  return served ? hintsNotTaken(hints, served.provider, served.id) : hintsSet(hints);
}

/**
 * Whether a model honours what an answer-changing field asks. Troupe's chat
 * result has one choice, no log probabilities, no audio and no citations, so
 * today no model does; a model gains one when its adapter and the result can
 * carry it, and routing then picks it.
 */
function honours(_field: "n" | "logprobs" | "audio" | "web_search_options", _m: ModelEntry): boolean {
  return false;
}

function need(field: "n" | "logprobs" | "audio" | "web_search_options", path: string, asked: string): FieldNeed {
  return { path: `body.${path}`, asked, problem: (m) => (honours(field, m) ? undefined : `model ${m.id} does not answer with ${asked}`) };
}

/** The answer-changing fields the body sets, as routing needs (providers/catalogue.ts FieldNeed). */
export function answerChangingNeeds(body: OpenAiChatRequest): FieldNeed[] {
  const needs: FieldNeed[] = [];
  if (body.n != null && body.n > 1) needs.push(need("n", "n", `${body.n} choices (n)`));
  if (body.logprobs === true) needs.push(need("logprobs", "logprobs", "log probabilities (logprobs)"));
  else if (body.top_logprobs != null && body.top_logprobs > 0) needs.push(need("logprobs", "top_logprobs", "log probabilities (top_logprobs)"));
  if (body.modalities?.includes("audio")) needs.push(need("audio", "modalities", "audio output (modalities)"));
  else if (body.audio != null) needs.push(need("audio", "audio", "audio output (audio)"));
  if (body.web_search_options != null) needs.push(need("web_search_options", "web_search_options", "a web search (web_search_options)"));
  return needs;
}

/** The 400's wording when no catalogue model honours a field: who would (none, today). */
export function noModelHonours(field: FieldNeed, honouring: readonly ModelEntry[]): string {
  if (honouring.length === 0) return `no model served by Troupe answers with ${field.asked}; leave the field out`;
  return `${field.asked} needs one of the models ${honouring.map((m) => m.id).join(", ")}`;
}
