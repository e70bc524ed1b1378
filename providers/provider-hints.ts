// Which provider takes which of the OpenAI chat's tuning hints
// (ProviderHints, chat-request.ts): the one table the adapters send from and
// the compatible mounts name the rest from (troupe-ignored-params), so the
// header never disagrees with what went upstream.
import type { ProviderHints } from "./chat-request.ts";

export type ProviderHintName = keyof ProviderHints;

/** Every hint, in the order the header names them. */
export const providerHintNames = ["parallel_tool_calls", "verbosity", "presence_penalty", "frequency_penalty", "logit_bias"] as const satisfies readonly ProviderHintName[];

/**
 * The hints each provider's API takes, by provider name (results' `provider`).
 * OpenAI takes them all (`verbosity` only on the gpt-5 family: see
 * hintsTakenBy). Anthropic takes parallel_tool_calls as
 * `tool_choice.disable_parallel_tool_use`. Gemini: its API refuses the
 * penalties on the 2.x models Troupe serves (Google documents them for the
 * 1.5 models only), so none. A provider absent here (openai-compatible
 * endpoints, Mistral, Azure, the simulated models) takes none: an unknown
 * server may refuse a field it does not know.
 */
const takenByProvider: Readonly<Record<string, readonly ProviderHintName[]>> = {
  openai: providerHintNames,
  anthropic: ["parallel_tool_calls"],
};

/** OpenAI's sampling hints, which its reasoning models (o-series, gpt-5) refuse with a 400 "Unsupported parameter". */
const samplingHints: readonly ProviderHintName[] = ["presence_penalty", "frequency_penalty", "logit_bias"];

/** The hints `provider` takes for `model` (the upstream model name, or a catalogue id). */
export function hintsTakenBy(provider: string, model: string): readonly ProviderHintName[] {
  const taken = takenByProvider[provider] ?? [];
  if (provider !== "openai") return taken;
  // verbosity is a gpt-5 parameter; the penalties and logit_bias are the other models'.
  const reasoning = /^(o\d|gpt-5)/.test(model);
  return taken.filter((h) => (h === "verbosity" ? /^gpt-5/.test(model) : !(reasoning && samplingHints.includes(h))));
}

/** The hints `hints` sets (present and not undefined), in providerHintNames' order. */
export function hintsSet(hints: ProviderHints | undefined): ProviderHintName[] {
  if (!hints) return [];
  return providerHintNames.filter((name) => hints[name] !== undefined);
}

/** The hints set in `hints` that `provider` does not take for `model`: what the mounts name as ignored. */
export function hintsNotTaken(hints: ProviderHints | undefined, provider: string, model: string): ProviderHintName[] {
  const taken = hintsTakenBy(provider, model);
  return hintsSet(hints).filter((name) => !taken.includes(name));
}

/** The hints `provider` takes for `model`, as they are set (the OpenAI adapter sends them under the same names). */
export function hintsFor(hints: ProviderHints | undefined, provider: string, model: string): ProviderHints {
  const out: Record<string, unknown> = {};
  if (!hints) return out;
  for (const name of hintsTakenBy(provider, model)) if (hints[name] !== undefined) out[name] = hints[name];
  return out as ProviderHints;
}
