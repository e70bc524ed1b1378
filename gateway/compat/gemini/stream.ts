// Troupe's stream events → :streamGenerateContent?alt=sse's data events,
// each a GenerateContentResponse with the new parts only, as Gemini streams:
// text deltas as text parts, thinking deltas as thought parts (the block's
// signature on a part of its own when it arrives), a tool call as a
// functionCall part, and the finish as a last chunk with finishReason and
// usageMetadata.
import { isFinish, isReasoning, type StreamEvent } from "../../../providers/types.ts";
import { finishReasonOf, functionCallPart, usageOf } from "./response.ts";
import type { GenerateContentResponse } from "./schemas.ts";

type AnswerPart = GenerateContentResponse["candidates"][number]["content"]["parts"][number];

export class GenerateStreamTranslator {
  private readonly id: string;
  private readonly model: string;
  private readonly includeThoughts: boolean;

  constructor(id: string, model: string, includeThoughts: boolean) {
    this.id = id;
    this.model = model;
    this.includeThoughts = includeThoughts;
  }

  private chunk(parts: AnswerPart[], finish?: { finishReason: string; usage: GenerateContentResponse["usageMetadata"] }, model = this.model): GenerateContentResponse {
    const candidate: GenerateContentResponse["candidates"][number] = { content: { role: "model", parts }, index: 0 };
    if (finish) candidate.finishReason = finish.finishReason;
    const out: GenerateContentResponse = { candidates: [candidate], modelVersion: model, responseId: this.id };
    if (finish?.usage) out.usageMetadata = finish.usage;
    return out;
  }

  /** The chunks an event becomes (none for thinking the client did not ask to see). */
  push(event: StreamEvent): GenerateContentResponse[] {
    if (isFinish(event)) return [this.chunk([], { finishReason: finishReasonOf(event.finish_reason), usage: usageOf(event) }, event.model)];
    if (isReasoning(event)) {
      if (!this.includeThoughts) return [];
      if ("reasoning_delta" in event) return [this.chunk([{ text: event.reasoning_delta, thought: true }])];
      const block = event.reasoning_block;
      if (block.redacted !== undefined || !block.signature) return [];
      return [this.chunk([{ text: "", thought: true, thoughtSignature: block.signature }])];
    }
    if ("delta" in event) return event.delta === "" ? [] : [this.chunk([{ text: event.delta }])];
    return [this.chunk([functionCallPart(event.tool_call)])];
  }
}
