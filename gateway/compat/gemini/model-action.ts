// Gemini's paths put the method after the model, in the same segment:
// `models/gemini-2.5-flash:generateContent`. uWS matches whole segments, so
// the mount serves one route per `models/:modelAction` and splits here on
// the last `:` (a model id has none; an action never has one).
import { TroupeError } from "../../../core/errors.ts";

export const modelActions = ["generateContent", "streamGenerateContent", "countTokens", "embedContent", "batchEmbedContents"] as const;
export type ModelAction = (typeof modelActions)[number];

export interface ModelCall {
  model: string;
  action: ModelAction;
}

/** The model and action of a `:modelAction` segment, or undefined when it names no action served here. */
export function modelActionOf(segment: string): ModelCall | undefined {
  const at = segment.lastIndexOf(":");
  if (at <= 0) return undefined;
  const action = segment.slice(at + 1);
  if (!(modelActions as readonly string[]).includes(action)) return undefined;
  // The server has percent-decoded path parameters already.
  return { model: segment.slice(0, at), action: action as ModelAction };
}

/** The same, or Gemini's 404 for a method it does not have (as Google answers an unknown `:method`). */
export function requireModelAction(segment: string): ModelCall {
  const call = modelActionOf(segment);
  if (call) return call;
  const at = segment.lastIndexOf(":");
  const what = at > 0 ? `method ${segment.slice(at + 1)} of models/${segment.slice(0, at)}` : `models/${segment} with no method`;
  throw new TroupeError("not_found", `${what} is not served: POST models/{model}:${modelActions.join(" | :")}`);
}
