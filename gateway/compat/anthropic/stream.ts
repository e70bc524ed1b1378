// Troupe's stream events → Anthropic's named SSE events: message_start, then
// per content block content_block_start / content_block_delta (text_delta,
// input_json_delta) / content_block_stop, then message_delta (stop_reason,
// usage) and message_stop. Troupe emits a tool call once, complete, so its
// block carries the whole input as one input_json_delta.
import type { StreamEvent, StreamFinish } from "../../../providers/types.ts";
import { stopReasonOf } from "./response.ts";
import { StopSequenceFilter } from "./stop-sequences.ts";

/** One SSE event: its `event:` name and its `data:` (whose `type` is the same name). */
export interface SseFrame {
  event: string;
  data: Record<string, unknown>;
}

const frame = (event: string, data: Record<string, unknown>): SseFrame => ({ event, data: { type: event, ...data } });

export class MessageStreamTranslator {
  private index = -1;
  private openText = false;
  private readonly stops: StopSequenceFilter;
  private readonly id: string;
  private readonly model: string;

  constructor(id: string, model: string, stopSequences: readonly string[] = []) {
    this.id = id;
    this.model = model;
    this.stops = new StopSequenceFilter(stopSequences);
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
        usage: { input_tokens: estimatedInputTokens, output_tokens: 0 },
      },
    });
  }

  /** The frames for one delta or tool call (none once a stop sequence ended the text). */
  push(event: Exclude<StreamEvent, StreamFinish>): SseFrame[] {
    if (this.stops.stoppedBy !== undefined) return [];
    if ("delta" in event) return this.text(this.stops.push(event.delta));
    // Text held back for a possible stop sequence is text after all: the tool call follows it.
    const frames = [...this.text(this.stops.flush()), ...this.closeText()];
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
    const frames = stoppedBy === undefined ? this.text(this.stops.flush()) : [];
    frames.push(...this.closeText());
    frames.push(
      frame("message_delta", {
        delta: { stop_reason: stoppedBy === undefined ? stopReasonOf(event.finish_reason) : "stop_sequence", stop_sequence: stoppedBy ?? null },
        usage: { input_tokens: event.input_tokens, output_tokens: event.output_tokens },
      }),
      frame("message_stop", {}),
    );
    return frames;
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
