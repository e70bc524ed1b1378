// A stored response told again as the Responses API's server-sent events
// (GET /openai/v1/responses/{id}?stream=true): the same frames a live stream
// of that answer sends (stream.ts), each output item whole in one delta, so
// the SDKs' stream parsers rebuild exactly the stored response.
// `starting_after` skips the events up to and including that sequence number.
import type { Item } from "./items.ts";
import type { ResponseEvent } from "./stream.ts";

type Frame = Omit<ResponseEvent, "sequence_number">;

function textOf(item: Item): string {
  const parts = Array.isArray(item.content) ? (item.content as { type?: string; text?: string }[]) : [];
  return parts.filter((p) => p.type === "output_text").map((p) => p.text ?? "").join("");
}

function summaryOf(item: Item): string {
  const parts = Array.isArray(item.summary) ? (item.summary as { text?: string }[]) : [];
  return parts.map((p) => p.text ?? "").join("");
}

function messageFrames(item: Item, index: number): Frame[] {
  const text = textOf(item);
  const id = item.id;
  const part = { type: "output_text", text, annotations: [], logprobs: [] };
  const frames: Frame[] = [
    { type: "response.output_item.added", output_index: index, item: { ...item, status: "in_progress", content: [] } },
    { type: "response.content_part.added", item_id: id, output_index: index, content_index: 0, part: { ...part, text: "" } },
  ];
  if (text !== "") frames.push({ type: "response.output_text.delta", item_id: id, output_index: index, content_index: 0, delta: text, logprobs: [] });
  frames.push(
    { type: "response.output_text.done", item_id: id, output_index: index, content_index: 0, text, logprobs: [] },
    { type: "response.content_part.done", item_id: id, output_index: index, content_index: 0, part },
    { type: "response.output_item.done", output_index: index, item },
  );
  return frames;
}

function callFrames(item: Item, index: number): Frame[] {
  const args = typeof item.arguments === "string" ? item.arguments : "";
  return [
    { type: "response.output_item.added", output_index: index, item: { ...item, status: "in_progress", arguments: "" } },
    { type: "response.function_call_arguments.delta", item_id: item.id, output_index: index, delta: args },
    { type: "response.function_call_arguments.done", item_id: item.id, output_index: index, name: item.name, arguments: args },
    { type: "response.output_item.done", output_index: index, item },
  ];
}

function reasoningFrames(item: Item, index: number): Frame[] {
  const text = summaryOf(item);
  const id = item.id;
  const frames: Frame[] = [{ type: "response.output_item.added", output_index: index, item: { ...item, summary: [] } }];
  if (text !== "") {
    frames.push(
      { type: "response.reasoning_summary_part.added", item_id: id, output_index: index, summary_index: 0, part: { type: "summary_text", text: "" } },
      { type: "response.reasoning_summary_text.delta", item_id: id, output_index: index, summary_index: 0, delta: text },
      { type: "response.reasoning_summary_text.done", item_id: id, output_index: index, summary_index: 0, text },
      { type: "response.reasoning_summary_part.done", item_id: id, output_index: index, summary_index: 0, part: { type: "summary_text", text } },
    );
  }
  frames.push({ type: "response.output_item.done", output_index: index, item });
  return frames;
}

function itemFrames(item: Item, index: number): Frame[] {
  if (item.type === "function_call") return callFrames(item, index);
  if (item.type === "reasoning") return reasoningFrames(item, index);
  if (item.type === "message") return messageFrames(item, index);
  return [
    { type: "response.output_item.added", output_index: index, item },
    { type: "response.output_item.done", output_index: index, item },
  ];
}

function terminalType(status: unknown): string {
  if (status === "completed") return "response.completed";
  if (status === "incomplete") return "response.incomplete";
  if (status === "cancelled") return "response.cancelled";
  return "response.failed";
}

/** Every event of the stored response, numbered from 0; those after `startingAfter` when given. */
export function replayEvents(response: Item, startingAfter?: number): ResponseEvent[] {
  const output = Array.isArray(response.output) ? (response.output as Item[]) : [];
  const opening = { ...response, status: "in_progress", output: [], usage: null };
  const frames: Frame[] = [
    { type: "response.created", response: opening },
    { type: "response.in_progress", response: opening },
    ...output.flatMap((item, index) => itemFrames(item, index)),
    { type: terminalType(response.status), response },
  ];
  const events = frames.map((frame, sequence_number) => ({ ...frame, sequence_number }) as ResponseEvent);
  return startingAfter === undefined ? events : events.filter((e) => e.sequence_number > startingAfter);
}
