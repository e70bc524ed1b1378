// Troupe's chat result → Anthropic's Message: the thinking first (one
// thinking or redacted_thinking block each, thinking.ts), the text as one
// text block, each tool call as a tool_use block, finish_reason as
// stop_reason, and the prompt-cache counts in usage whichever provider
// answered.
import { prefixedId } from "../../../core/ids.ts";
import type { ChatExtras, ChatResult, FinishReason } from "../../../providers/types.ts";
import type { AnthropicMessage, ResponseBlock, StopReason, Usage } from "./schemas.ts";
import { toThinkingBlock } from "./thinking.ts";
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

/**
 * Anthropic's usage. Troupe counts cached tokens inside input_tokens;
 * Anthropic counts them apart (its input_tokens are the uncached rest), so
 * they are taken out here. A count the provider did not give is null.
 */
export function usageOf(tokens: { input_tokens: number; output_tokens: number }, extras: ChatExtras | undefined): Usage {
  const cached = (extras?.cached_input_tokens ?? 0) + (extras?.cache_write_input_tokens ?? 0);
  return {
    input_tokens: Math.max(0, tokens.input_tokens - cached),
    output_tokens: tokens.output_tokens,
    cache_creation_input_tokens: extras?.cache_write_input_tokens ?? null,
    cache_read_input_tokens: extras?.cached_input_tokens ?? null,
  };
}

export interface AnswerOptions {
  stopSequences?: readonly string[] | undefined;
  /** tool_choice.disable_parallel_tool_use: the answer calls one tool at most (the first). */
  oneToolCall?: boolean | undefined;
  /** thinking.display "omitted": thinking blocks without their text (their signatures still go back). */
  omitThinking?: boolean | undefined;
}

export function toMessage(result: ChatResult, id: string, options: AnswerOptions = {}): AnthropicMessage {
  const stopSequences = options.stopSequences ?? [];
  let text = result.content;
  let stopReason = stopReasonOf(result.finish_reason);
  let stopSequence: string | null = null;
  let toolCalls = (result.tool_calls ?? []).slice(0, options.oneToolCall ? 1 : undefined);
  const stop = findStop(text, stopSequences);
  if (stop) {
    // The model would have stopped there: nothing after it, tool calls included.
    text = text.slice(0, stop.index);
    stopReason = "stop_sequence";
    stopSequence = stop.sequence;
    toolCalls = [];
  }
  const content: ResponseBlock[] = (result.extras?.reasoning ?? []).map((r) => toThinkingBlock(options.omitThinking ? { ...r, text: "" } : r));
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
    usage: usageOf(result, result.extras),
  };
}
