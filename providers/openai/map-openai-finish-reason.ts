// OpenAI finish_reason → Troupe's normalized set (docs/api/chat.md#finish_reason).
import type { FinishReason } from "../types.ts";

export function mapOpenAIFinishReason(reason: string | null | undefined, hasToolCalls: boolean): FinishReason {
  switch (reason) {
    case "stop":
      return hasToolCalls ? "tool_calls" : "stop";
    case "length":
      return "length";
    case "tool_calls":
    case "function_call":
      return "tool_calls";
    case "content_filter":
      return "content_filter";
    case null:
    case undefined:
      return hasToolCalls ? "tool_calls" : "stop";
    default:
      return "error";
  }
}
