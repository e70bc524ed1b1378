// Anthropic stop_reason → Troupe's normalized set (docs/api/chat.md#finish_reason).
import type { FinishReason } from "../types.ts";

export function mapAnthropicFinishReason(reason: string | null | undefined): FinishReason {
  switch (reason) {
    case "end_turn":
    case "stop_sequence":
    case "pause_turn":
    case null:
    case undefined:
      return "stop";
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length";
    case "tool_use":
      return "tool_calls";
    case "refusal":
      return "content_filter";
    default:
      return "error";
  }
}
