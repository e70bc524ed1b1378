// Where Mistral's chat and embeddings API differs from OpenAI's, which it
// otherwise follows (providers/openai/ does the mapping):
// - tool-call ids must be exactly 9 letters or digits, so ids minted
//   elsewhere (call_…, toolu_…) are rewritten, the same way for the
//   assistant's tool_calls and the tool message answering them;
// - finish_reason adds model_length (the context window ran out) and error;
// - it refuses fields it does not know: no stream_options (its last chunk
//   carries usage unasked), no encoding_format or dimensions on embeddings;
// - max_tokens, not max_completion_tokens.
import { createHash } from "node:crypto";
import type { OpenAIDialect } from "../openai/api.ts";
import type { FinishReason } from "../types.ts";

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** A Mistral-shaped id stays; any other becomes 9 characters derived from it (stable across turns). */
export function mistralToolCallId(id: string): string {
  if (/^[A-Za-z0-9]{9}$/.test(id)) return id;
  const digest = createHash("sha256").update(id).digest();
  let out = "";
  for (let i = 0; i < 9; i++) out += alphabet[digest[i]! % alphabet.length];
  return out;
}

export function mapMistralFinishReason(reason: string | null | undefined, hasToolCalls: boolean): FinishReason {
  switch (reason) {
    case "stop":
    case null:
    case undefined:
      return hasToolCalls ? "tool_calls" : "stop";
    case "length":
    case "model_length":
      return "length";
    case "tool_calls":
      return "tool_calls";
    default:
      return "error";
  }
}

export const mistralDialect: OpenAIDialect = {
  streamUsageOption: false,
  toolCallId: mistralToolCallId,
  finishReason: mapMistralFinishReason,
  embedOptions: false,
};
