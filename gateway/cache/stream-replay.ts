// A stored answer as the router's stream events, and a live stream folded
// into the answer to store. Replayed text is cut one token a delta
// (providers/tokens.ts `tokenPieces`, the pieces the simulated provider
// streams and close to what live providers send), then the tool calls, then
// one finish event: each mount's own stream writer turns these into its
// format, so a replay reads like a live stream to every SDK.
import { tokenPieces } from "../../providers/tokens.ts";
import { isFinish, type ChatResult, type ReasoningBlock, type StreamEvent, type ToolCall } from "../../providers/types.ts";

export function* replayEvents(result: ChatResult): Generator<StreamEvent> {
  for (const block of result.extras?.reasoning ?? []) {
    if (block.text !== "") yield { reasoning_delta: block.text };
    yield { reasoning_block: block };
  }
  if (result.content !== "") for (const piece of tokenPieces(result.content)) yield { delta: piece };
  for (const call of result.tool_calls ?? []) yield { tool_call: call };
  const extras = result.extras?.reasoning_tokens !== undefined ? { reasoning_tokens: result.extras.reasoning_tokens } : undefined;
  yield { finish_reason: result.finish_reason, input_tokens: result.input_tokens, output_tokens: result.output_tokens, model: result.model, provider: result.provider, ...(extras ? { extras } : {}) };
}

/** Folds a live stream's events into the ChatResult they amount to; `finish` answers it once the finish event came. */
export class StreamFold {
  private content = "";
  private readonly toolCalls: ToolCall[] = [];
  private readonly reasoning: ReasoningBlock[] = [];

  add(event: StreamEvent): ChatResult | undefined {
    if ("delta" in event) this.content += event.delta;
    else if ("tool_call" in event) this.toolCalls.push(event.tool_call);
    else if ("reasoning_block" in event) this.reasoning.push(event.reasoning_block);
    else if (isFinish(event)) {
      const extras = this.reasoning.length > 0 || event.extras?.reasoning_tokens !== undefined ? { ...(this.reasoning.length > 0 ? { reasoning: this.reasoning } : {}), ...(event.extras?.reasoning_tokens !== undefined ? { reasoning_tokens: event.extras.reasoning_tokens } : {}) } : undefined;
      return {
        content: this.content,
        finish_reason: event.finish_reason,
        model: event.model,
        provider: event.provider,
        input_tokens: event.input_tokens,
        output_tokens: event.output_tokens,
        tool_calls: this.toolCalls.length > 0 ? this.toolCalls : null,
        ...(extras ? { extras } : {}),
      };
    }
    return undefined;
  }
}

/** Only complete, successful answers are kept: never an error, a filtered or a cut answer. */
export function storable(result: ChatResult): boolean {
  return result.finish_reason === "stop" || result.finish_reason === "length" || result.finish_reason === "tool_calls";
}
