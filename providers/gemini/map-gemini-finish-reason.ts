// Gemini finishReason → Troupe's normalized set. Gemini says STOP also when
// it called functions, so the caller passes whether it did (docs/api/chat.md#finish_reason).
import type { FinishReason } from "../types.ts";

export function mapGeminiFinishReason(reason: string | null | undefined, hasToolCalls: boolean): FinishReason {
  switch (reason) {
    case "STOP":
    case null:
    case undefined:
      return hasToolCalls ? "tool_calls" : "stop";
    case "MAX_TOKENS":
      return "length";
    case "SAFETY":
    case "RECITATION":
    case "BLOCKLIST":
    case "PROHIBITED_CONTENT":
    case "SPII":
    case "IMAGE_SAFETY":
      return "content_filter";
    default:
      return "error";
  }
}
