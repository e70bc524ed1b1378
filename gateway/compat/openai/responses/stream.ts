// Troupe's stream events (providers/types.ts) as the Responses API's
// server-sent events, each with its `sequence_number`: the created and
// in-progress frames, then per output item its added event, its deltas
// (thinking summary text, output text, function call arguments) and its
// done events, and the terminal response.completed / .incomplete / .failed
// carrying the whole response. Items are built here as they stream, so the
// response stored at the end has the very ids the client saw.
import type { FinishReason, ReasoningBlock, StreamEvent, StreamFinish, ToolCall } from "../../../../providers/types.ts";
import { isFinish } from "../../../../providers/types.ts";
import type { Item } from "./items.ts";
import { functionCallItem, messageItem, reasoningItem, type ModelOutput } from "./response-object.ts";

export interface ResponseEvent {
  type: string;
  sequence_number: number;
  [field: string]: unknown;
}

/** Code points per arguments fragment (as the chat mount's tool call deltas). */
const fragmentLength = 32;

function fragments(text: string): string[] {
  const points = Array.from(text);
  const out: string[] = [];
  for (let i = 0; i < points.length; i += fragmentLength) out.push(points.slice(i, i + fragmentLength).join(""));
  return out;
}

export class ResponseEventStream {
  private sequence = 0;
  readonly items: Item[] = [];
  private text: { index: number; parts: string[] } | undefined;
  private thinking: { index: number; parts: string[] } | undefined;
  private readonly calls: ToolCall[] = [];
  private readonly blocks: ReasoningBlock[] = [];
  private readonly ulid: string;

  constructor(ulid: string) {
    this.ulid = ulid;
  }

  private event(type: string, fields: Record<string, unknown>): ResponseEvent {
    return { type, sequence_number: this.sequence++, ...fields };
  }

  /** response.created and response.in_progress, with the response as it starts. */
  opening(response: Item): ResponseEvent[] {
    return [this.event("response.created", { response }), this.event("response.in_progress", { response })];
  }

  private closeText(out: ResponseEvent[], status: "completed" | "incomplete"): void {
    if (!this.text) return;
    const { index, parts } = this.text;
    const text = parts.join("");
    const item = messageItem(this.ulid, index, text, status);
    const id = item.id;
    this.items[index] = item;
    out.push(this.event("response.output_text.done", { item_id: id, output_index: index, content_index: 0, text, logprobs: [] }));
    out.push(this.event("response.content_part.done", { item_id: id, output_index: index, content_index: 0, part: { type: "output_text", text, annotations: [], logprobs: [] } }));
    out.push(this.event("response.output_item.done", { output_index: index, item }));
    this.text = undefined;
  }

  /** Ends the open thinking item, with its block when the provider gave one (else it is text only: nothing to send back). */
  private closeThinking(out: ResponseEvent[], block: ReasoningBlock | undefined): void {
    if (!this.thinking && !block) return;
    const index = this.thinking?.index ?? this.openThinking(out);
    const text = block?.text || (this.thinking?.parts.join("") ?? "");
    const whole: ReasoningBlock = block ? { ...block, text } : { provider: "", text };
    if (block) this.blocks.push(whole);
    const item = block ? reasoningItem(this.ulid, index, whole) : { ...reasoningItem(this.ulid, index, whole), encrypted_content: null };
    const id = item.id;
    if (text !== "") {
      out.push(this.event("response.reasoning_summary_text.done", { item_id: id, output_index: index, summary_index: 0, text }));
      out.push(this.event("response.reasoning_summary_part.done", { item_id: id, output_index: index, summary_index: 0, part: { type: "summary_text", text } }));
    }
    this.items[index] = item;
    out.push(this.event("response.output_item.done", { output_index: index, item }));
    this.thinking = undefined;
  }

  private openThinking(out: ResponseEvent[]): number {
    const index = this.items.length;
    const item = { type: "reasoning", id: `rs_${this.ulid}_${index}`, summary: [], encrypted_content: null };
    this.items.push(item);
    out.push(this.event("response.output_item.added", { output_index: index, item }));
    this.thinking = { index, parts: [] };
    return index;
  }

  /** The events one Troupe event makes (a finish event: every item closed; the terminal event is `closing`'s). */
  events(e: StreamEvent): ResponseEvent[] {
    const out: ResponseEvent[] = [];
    if ("reasoning_delta" in e) {
      if (e.reasoning_delta === "") return out;
      this.closeText(out, "completed");
      if (!this.thinking) {
        const index = this.openThinking(out);
        out.push(this.event("response.reasoning_summary_part.added", { item_id: this.items[index]!.id, output_index: index, summary_index: 0, part: { type: "summary_text", text: "" } }));
      }
      const { index, parts } = this.thinking!;
      parts.push(e.reasoning_delta);
      out.push(this.event("response.reasoning_summary_text.delta", { item_id: this.items[index]!.id, output_index: index, summary_index: 0, delta: e.reasoning_delta }));
    } else if ("reasoning_block" in e) {
      this.closeText(out, "completed");
      this.closeThinking(out, e.reasoning_block);
    } else if ("delta" in e) {
      if (e.delta === "") return out;
      this.closeThinking(out, undefined);
      if (!this.text) {
        const index = this.items.length;
        const item: Item = { ...messageItem(this.ulid, index, "", "in_progress"), content: [] };
        this.items.push(item);
        out.push(this.event("response.output_item.added", { output_index: index, item }));
        out.push(this.event("response.content_part.added", { item_id: item.id, output_index: index, content_index: 0, part: { type: "output_text", text: "", annotations: [], logprobs: [] } }));
        this.text = { index, parts: [] };
      }
      this.text.parts.push(e.delta);
      out.push(this.event("response.output_text.delta", { item_id: this.items[this.text.index]!.id, output_index: this.text.index, content_index: 0, delta: e.delta, logprobs: [] }));
    } else if ("tool_call" in e) {
      this.closeThinking(out, undefined);
      this.closeText(out, "completed");
      const index = this.items.length;
      const call = e.tool_call;
      this.calls.push(call);
      const done = functionCallItem(this.ulid, index, call);
      const added = { ...functionCallItem(this.ulid, index, call, "in_progress"), arguments: "" };
      this.items.push(done);
      out.push(this.event("response.output_item.added", { output_index: index, item: added }));
      for (const piece of fragments(String(done.arguments))) out.push(this.event("response.function_call_arguments.delta", { item_id: done.id, output_index: index, delta: piece }));
      out.push(this.event("response.function_call_arguments.done", { item_id: done.id, output_index: index, name: call.name, arguments: done.arguments }));
      out.push(this.event("response.output_item.done", { output_index: index, item: done }));
    } else if (isFinish(e)) {
      this.finishItems(out, e);
    }
    return out;
  }

  private finishItems(out: ResponseEvent[], finish: StreamFinish): void {
    this.closeThinking(out, undefined);
    this.closeText(out, finish.finish_reason === "length" ? "incomplete" : "completed");
    // Thinking an adapter reports only with the finish (not as blocks while streaming).
    for (const block of this.blocks.length === 0 ? (finish.extras?.reasoning ?? []) : []) {
      const index = this.items.length;
      const item = reasoningItem(this.ulid, index, block);
      this.blocks.push(block);
      this.items.push(item);
      out.push(this.event("response.output_item.added", { output_index: index, item }));
      out.push(this.event("response.output_item.done", { output_index: index, item }));
    }
    if (this.items.length === 0) {
      // Nothing said: one empty message, so output_text is "" as for a plain response.
      const item = messageItem(this.ulid, 0, "", "completed");
      this.items.push(item);
      out.push(this.event("response.output_item.added", { output_index: 0, item: { ...item, status: "in_progress", content: [] } }));
      out.push(this.event("response.output_item.done", { output_index: 0, item }));
    }
  }

  /** The terminal event: response.completed, .incomplete or .failed with the whole response. */
  closing(response: Item): ResponseEvent {
    const status = response.status;
    const type = status === "completed" ? "response.completed" : status === "incomplete" ? "response.incomplete" : "response.failed";
    return this.event(type, { response });
  }

  /** What the model said, for the stored response and the bill. */
  output(finish: Pick<StreamFinish, "model" | "input_tokens" | "output_tokens" | "extras"> & { finish_reason: FinishReason }): ModelOutput {
    const content = this.items.flatMap((i) => (i.type === "message" && Array.isArray(i.content) ? i.content.map((p: { text?: string }) => p.text ?? "") : [])).join("");
    return { content, tool_calls: [...this.calls], reasoning: [...this.blocks], ...finish };
  }
}
