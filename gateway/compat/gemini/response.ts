// Troupe's chat result → Gemini's GenerateContentResponse: one candidate
// whose parts are the thinking (thought: true, with its signature, when
// includeThoughts asked), the text and one functionCall part per tool call;
// finishReason and usageMetadata in Gemini's names, prompt-cache and
// thinking token counts from the result's extras.
import { randomBytes } from "node:crypto";
import type { ChatExtras, ChatResult, FinishReason, ReasoningBlock, ToolCall } from "../../../providers/types.ts";
import type { GenerateContentResponse } from "./schemas.ts";

type AnswerPart = GenerateContentResponse["candidates"][number]["content"]["parts"][number];

/** Gemini's responseId: an opaque id per answer. */
export function responseId(): string {
  return randomBytes(12).toString("base64url");
}

/** Gemini ends a function call with STOP too: the functionCall part says it. */
export function finishReasonOf(reason: FinishReason): string {
  switch (reason) {
    case "length":
      return "MAX_TOKENS";
    case "content_filter":
      return "SAFETY";
    case "error":
      return "OTHER";
    default:
      return "STOP";
  }
}

export function usageOf(figures: { input_tokens: number; output_tokens: number; extras?: ChatExtras | undefined }): NonNullable<GenerateContentResponse["usageMetadata"]> {
  const usage: NonNullable<GenerateContentResponse["usageMetadata"]> = {
    promptTokenCount: figures.input_tokens,
    candidatesTokenCount: figures.output_tokens,
    totalTokenCount: figures.input_tokens + figures.output_tokens,
  };
  const { cached_input_tokens: cached, reasoning_tokens: thoughts } = figures.extras ?? {};
  if (cached !== undefined && cached > 0) usage.cachedContentTokenCount = cached;
  if (thoughts !== undefined && thoughts > 0) usage.thoughtsTokenCount = thoughts;
  return usage;
}

export function thoughtPart(block: ReasoningBlock): AnswerPart {
  return block.signature ? { text: block.text, thought: true, thoughtSignature: block.signature } : { text: block.text, thought: true };
}

export function functionCallPart(call: ToolCall): AnswerPart {
  return { functionCall: { id: call.id, name: call.name, args: call.arguments } };
}

export function toGenerateContentResponse(result: ChatResult, id: string, includeThoughts: boolean): GenerateContentResponse {
  const parts: AnswerPart[] = [];
  // Redacted thinking has no text to show; its data goes back only through a provider's own API.
  if (includeThoughts) for (const block of result.extras?.reasoning ?? []) if (block.redacted === undefined) parts.push(thoughtPart(block));
  if (result.content !== "" || (result.tool_calls ?? []).length === 0) parts.push({ text: result.content });
  for (const call of result.tool_calls ?? []) parts.push(functionCallPart(call));
  return {
    candidates: [{ content: { role: "model", parts }, finishReason: finishReasonOf(result.finish_reason), index: 0 }],
    usageMetadata: usageOf(result),
    modelVersion: result.model,
    responseId: id,
  };
}
