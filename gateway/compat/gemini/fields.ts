// The one rule for every field of Gemini's generateContent request that
// Troupe's chat request has no place for (docs/guides/gemini.md, the field
// table): a field that changes only how the provider works is accepted, not
// sent, and named in the troupe-ignored-params header; a field that changes
// what the answer is and no model served here can honour is a 400 naming it.
// Fields Troupe carries are translated in request.ts; fields Gemini's API
// does not have are refused by the strict schemas (schemas.ts).
import type { ProviderHints } from "../../../providers/chat-request.ts";
import { hintsNotTaken, hintsSet } from "../../../providers/provider-hints.ts";
import type { GenerateContentBody } from "./schemas.ts";

/** A field accepted and not sent on: its path, and whether the body sets it. */
interface IgnoredField {
  path: string;
  set(body: GenerateContentBody): boolean;
}

/** A field refused by name: its path, and why, when the body asks what no model here answers. */
interface RefusedField {
  path: string;
  refusal(body: GenerateContentBody): string | undefined;
}

const config = (b: GenerateContentBody) => b.generationConfig;

/**
 * In the header's order. A sampling knob Troupe's chat request does not
 * carry (topK) tunes an answer of the same kind. The penalties are not here:
 * they travel as the request's hints (providers/provider-hints.ts) and are
 * named only for a model that does not take them (ignoredHintFields).
 */
export const ignoredFields: readonly IgnoredField[] = [
  { path: "safetySettings", set: (b) => b.safetySettings !== undefined },
  { path: "labels", set: (b) => b.labels !== undefined },
  { path: "toolConfig.retrievalConfig", set: (b) => b.toolConfig?.retrievalConfig !== undefined },
  { path: "generationConfig.topK", set: (b) => config(b)?.topK !== undefined },
  { path: "generationConfig.mediaResolution", set: (b) => config(b)?.mediaResolution !== undefined },
  { path: "generationConfig.enableEnhancedCivicAnswers", set: (b) => config(b)?.enableEnhancedCivicAnswers !== undefined },
];

/** The hints this mount sets, by their Gemini field. */
const hintFields = { presence_penalty: "generationConfig.presencePenalty", frequency_penalty: "generationConfig.frequencyPenalty" } as const;

/** The request's hints from generationConfig (undefined when it sets none). */
export function hintsOf(body: GenerateContentBody): ProviderHints | undefined {
  const hints: ProviderHints = {};
  if (config(body)?.presencePenalty !== undefined) hints.presence_penalty = config(body)!.presencePenalty;
  if (config(body)?.frequencyPenalty !== undefined) hints.frequency_penalty = config(body)!.frequencyPenalty;
  return hintsSet(hints).length > 0 ? hints : undefined;
}

/** The penalties the model that served (a stream: the model named in the path) does not take, as Gemini field paths. */
export function ignoredHintFields(hints: ProviderHints | undefined, served: { provider: string; id: string }): string[] {
  return hintsNotTaken(hints, served.provider, served.id).flatMap((name) => (name in hintFields ? [hintFields[name as keyof typeof hintFields]] : []));
}

const builtInTools = ["googleSearch", "googleSearchRetrieval", "codeExecution", "urlContext", "retrieval", "computerUse", "fileSearch", "googleMaps"] as const;

/** Answer-changing fields no model served by Troupe honours (its chat result has one candidate, no log probabilities, text only). */
export const refusedFields: readonly RefusedField[] = [
  { path: "generationConfig.candidateCount", refusal: (b) => ((config(b)?.candidateCount ?? 1) > 1 ? "more than one candidate: no model served by Troupe answers with several; leave it out or set 1" : undefined) },
  { path: "generationConfig.responseLogprobs", refusal: (b) => (config(b)?.responseLogprobs === true ? "no model served by Troupe answers with log probabilities" : undefined) },
  { path: "generationConfig.logprobs", refusal: (b) => (config(b)?.logprobs !== undefined ? "no model served by Troupe answers with log probabilities" : undefined) },
  {
    path: "generationConfig.responseModalities",
    refusal: (b) => (config(b)?.responseModalities?.some((m) => m.toUpperCase() !== "TEXT") ? "only TEXT answers are served on this mount (audio and images have their own /v1 endpoints)" : undefined),
  },
  { path: "generationConfig.speechConfig", refusal: (b) => (config(b)?.speechConfig !== undefined ? "spoken answers are not served on this mount (POST /v1/audio/speech)" : undefined) },
  { path: "generationConfig.imageConfig", refusal: (b) => (config(b)?.imageConfig !== undefined ? "image answers are not served on this mount (POST /v1/images/generations)" : undefined) },
  {
    path: "generationConfig.responseMimeType",
    refusal: (b) => {
      const mime = config(b)?.responseMimeType;
      return mime === undefined || mime === "text/plain" || mime === "application/json" ? undefined : `${mime}: only text/plain and application/json answers are served`;
    },
  },
  { path: "cachedContent", refusal: (b) => (b.cachedContent !== undefined ? "cached contents are not stored by Troupe: send the contents themselves (providers' own prompt caching still applies)" : undefined) },
  ...builtInTools.map((tool) => ({
    path: `tools.${tool}`,
    refusal: (b: GenerateContentBody) => (b.tools?.some((t) => t[tool] !== undefined) ? `Google's built-in ${tool} tool runs only on Google's servers; declare functionDeclarations instead` : undefined),
  })),
];

/** The ignored fields the body sets, for the troupe-ignored-params header. */
export function ignoredFieldsOf(body: GenerateContentBody): string[] {
  return ignoredFields.filter((f) => f.set(body)).map((f) => f.path);
}
