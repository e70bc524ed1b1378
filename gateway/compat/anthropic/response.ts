// Troupe's chat result → Anthropic's Message: the text as one text block,
// each tool call as a tool_use block, finish_reason as stop_reason.
import { prefixedId } from "../../../core/ids.ts";
import type { ChatResult, FinishReason } from "../../../providers/types.ts";
import type { AnthropicMessage, ResponseBlock, StopReason } from "./schemas.ts";
import { findStop } from "./stop-sequences.ts";

/** Anthropic's message ids are `msg_…`. */
export const messageId = (): string => prefixedId("msg");

/**
 * Troupe's finish reasons, the other way round from how the Anthropic
 * adapter maps Anthropic's (docs/api/chat.md, finish_reason). `error` does not reach here
 * as a finish (a failed call is an error answer); it reads as end_turn.
 */
export function stopReasonOf(finish: FinishReason): StopReason {
  switch (finish) {
    case "length":
      return "max_tokens";
    case "tool_calls":
      return "tool_use";
    case "content_filter":
      return "refusal";
    case "stop":
    case "error":
      return "end_turn";
  }
}

export function toMessage(result: ChatResult, id: string, stopSequences: readonly string[] = []): AnthropicMessage {
  let text = result.content;
  let stopReason = stopReasonOf(result.finish_reason);
  let stopSequence: string | null = null;
  let toolCalls = result.tool_calls ?? [];
  const stop = findStop(text, stopSequences);
  if (stop) {
    // The model would have stopped there: nothing after it, tool calls included.
    text = text.slice(0, stop.index);
    stopReason = "stop_sequence";
    stopSequence = stop.sequence;
    toolCalls = [];
  }
  const content: ResponseBlock[] = [];
  if (text !== "" || toolCalls.length === 0) content.push({ type: "text", text });
  for (const call of toolCalls) content.push({ type: "tool_use", id: call.id, name: call.name, input: call.arguments });
  return {
    id,
    type: "message",
    role: "assistant",
    model: result.model,
    content,
    stop_reason: stopReason,
    stop_sequence: stopSequence,
    usage: { input_tokens: result.input_tokens, output_tokens: result.output_tokens },
  };
}
