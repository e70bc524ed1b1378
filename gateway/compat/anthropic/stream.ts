// Troupe's stream events → Anthropic's named SSE events: message_start, then
// per content block content_block_start / content_block_delta (text_delta,
// input_json_delta) / content_block_stop, then message_delta (stop_reason,
// usage) and message_stop. Troupe emits a tool call once, complete, so its
// block carries the whole input as one input_json_delta. Thinking streams
// as Anthropic's does: a thinking block of thinking_delta events closed by
// one signature_delta (thinking.ts says what the signature is for another
// provider's thinking); a redacted block comes whole.
import type { ReasoningBlock, StreamEvent, StreamFinish, StreamReasoning } from "../../../providers/types.ts";
import { stopReasonOf, usageOf } from "./response.ts";
import { toThinkingBlock } from "./thinking.ts";
import { StopSequenceFilter } from "./stop-sequences.ts";

/** One SSE event: its `event:` name and its `data:` (whose `type` is the same name). */
export interface SseFrame {
  event: string;
  data: Record<string, unknown>;
}

const frame = (event: string, data: Record<string, unknown>): SseFrame => ({ event, data: { type: event, ...data } });

export interface StreamOptions {
  stopSequences?: readonly string[] | undefined;
  /** tool_choice.disable_parallel_tool_use: tool calls after the first are dropped. */
  oneToolCall?: boolean | undefined;
  /** thinking.display "omitted": thinking blocks open and close (with their signature) but stream no thinking_delta. */
  omitThinking?: boolean | undefined;
  /** Whose thinking a thinking block is when the stream ends it without a signed block (the requested model's provider). */
  provider: string;
}

export class MessageStreamTranslator {
  private index = -1;
  private openText = false;
  /** The open thinking block's text so far (undefined: none open). */
  private openThinking: string | undefined;
  private toolCalls = 0;
  private readonly stops: StopSequenceFilter;
  private readonly id: string;
  private readonly model: string;
  private readonly options: StreamOptions;

  constructor(id: string, model: string, options: StreamOptions) {
    this.id = id;
    this.model = model;
    this.options = options;
    this.stops = new StopSequenceFilter(options.stopSequences ?? []);
  }

  /**
   * The first event. The input count is the gateway's estimate (the
   * provider's count comes with the finish): message_delta carries the real one.
   */
  start(estimatedInputTokens: number): SseFrame {
    return frame("message_start", {
      message: {
        id: this.id,
        type: "message",
        role: "assistant",
        model: this.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: usageOf({ input_tokens: estimatedInputTokens, output_tokens: 0 }, undefined),
      },
    });
  }

  /** The frames for one delta or tool call (none once a stop sequence ended the text). */
  push(event: Exclude<StreamEvent, StreamFinish>): SseFrame[] {
    if (this.stops.stoppedBy !== undefined) return [];
    if ("delta" in event) {
      const text = this.stops.push(event.delta);
      return text === "" ? [] : [...this.closeThinking(), ...this.text(text)];
    }
    if ("reasoning_delta" in event || "reasoning_block" in event) return this.reasoning(event);
    if (this.options.oneToolCall && this.toolCalls > 0) return [];
    this.toolCalls += 1;
    // Text held back for a possible stop sequence is text after all: the tool call follows it.
    const frames = [...this.closeThinking(), ...this.text(this.stops.flush()), ...this.closeText()];
    this.index += 1;
    const { id, name, arguments: input } = event.tool_call;
    frames.push(
      frame("content_block_start", { index: this.index, content_block: { type: "tool_use", id, name, input: {} } }),
      frame("content_block_delta", { index: this.index, delta: { type: "input_json_delta", partial_json: JSON.stringify(input) } }),
      frame("content_block_stop", { index: this.index }),
    );
    return frames;
  }

  /** The closing frames: what text was held back, the open block's stop, message_delta, message_stop. */
  finish(event: StreamFinish): SseFrame[] {
    const stoppedBy = this.stops.stoppedBy;
    const frames = this.closeThinking();
    if (stoppedBy === undefined) frames.push(...this.text(this.stops.flush()));
    frames.push(...this.closeText());
    frames.push(
      frame("message_delta", {
        delta: { stop_reason: stoppedBy === undefined ? stopReasonOf(event.finish_reason) : "stop_sequence", stop_sequence: stoppedBy ?? null },
        usage: usageOf(event, event.extras),
      }),
      frame("message_stop", {}),
    );
    return frames;
  }

  /** Thinking: deltas open a thinking block; a block (signed, or redacted) closes it, or stands alone. */
  private reasoning(event: StreamReasoning): SseFrame[] {
    // Thinking after text starts a new block (interleaved thinking, between tool calls).
    const frames = [...this.text(this.stops.flush()), ...this.closeText()];
    if ("reasoning_delta" in event) {
      if (event.reasoning_delta === "") return frames;
      if (this.openThinking === undefined) frames.push(this.startBlock({ type: "thinking", thinking: "", signature: "" }));
      this.openThinking = (this.openThinking ?? "") + event.reasoning_delta;
      if (!this.options.omitThinking) frames.push(frame("content_block_delta", { index: this.index, delta: { type: "thinking_delta", thinking: event.reasoning_delta } }));
      return frames;
    }
    const block = toThinkingBlock(this.options.omitThinking ? { ...event.reasoning_block, text: "" } : event.reasoning_block);
    if (block.type === "redacted_thinking") {
      frames.push(...this.closeThinking(), this.startBlock(block), frame("content_block_stop", { index: this.index }));
      return frames;
    }
    if (this.openThinking === undefined) {
      // A block that came whole (a provider that does not stream its thinking).
      frames.push(this.startBlock({ type: "thinking", thinking: "", signature: "" }));
      if (block.thinking !== "") frames.push(frame("content_block_delta", { index: this.index, delta: { type: "thinking_delta", thinking: block.thinking } }));
    }
    this.openThinking = undefined;
    frames.push(frame("content_block_delta", { index: this.index, delta: { type: "signature_delta", signature: block.signature } }), frame("content_block_stop", { index: this.index }));
    return frames;
  }

  /** Ends a thinking block its provider gave no signed block for: signed as the requested provider's, so it goes back there. */
  private closeThinking(): SseFrame[] {
    if (this.openThinking === undefined) return [];
    const unsigned: ReasoningBlock = { provider: this.options.provider, text: this.openThinking };
    this.openThinking = undefined;
    const block = toThinkingBlock(unsigned);
    const signature = block.type === "thinking" ? block.signature : "";
    return [frame("content_block_delta", { index: this.index, delta: { type: "signature_delta", signature } }), frame("content_block_stop", { index: this.index })];
  }

  private startBlock(block: Record<string, unknown>): SseFrame {
    this.index += 1;
    return frame("content_block_start", { index: this.index, content_block: block });
  }

  private text(text: string): SseFrame[] {
    if (text === "") return [];
    const frames: SseFrame[] = [];
    if (!this.openText) {
      this.index += 1;
      this.openText = true;
      frames.push(frame("content_block_start", { index: this.index, content_block: { type: "text", text: "" } }));
    }
    frames.push(frame("content_block_delta", { index: this.index, delta: { type: "text_delta", text } }));
    return frames;
  }

  private closeText(): SseFrame[] {
    if (!this.openText) return [];
    this.openText = false;
    return [frame("content_block_stop", { index: this.index })];
  }
}
