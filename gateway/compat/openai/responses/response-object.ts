// The response object as OpenAI returns it (object "response"), built from
// the request and what the model answered, and the output items with their
// ids. The SDKs compute `output_text` from the message items' output_text
// parts, so those are exactly OpenAI's.
import type { ChatExtras, FinishReason, ReasoningBlock, ToolCall } from "../../../../providers/types.ts";
import { encodeReasoning, itemId, type Item } from "./items.ts";
import type { ResponseCreateBody } from "./request.ts";

export type ResponseStatus = "completed" | "incomplete" | "failed" | "in_progress" | "queued" | "cancelled";

/** What the model gave, whole (from a chat result, or gathered from a stream). */
export interface ModelOutput {
  content: string;
  tool_calls: ToolCall[];
  reasoning: ReasoningBlock[];
  finish_reason: FinishReason;
  model: string;
  input_tokens: number;
  output_tokens: number;
  extras?: ChatExtras | undefined;
}

export function reasoningItem(ulid: string, position: number, block: ReasoningBlock): Item {
  return { type: "reasoning", id: itemId("rs", ulid, position), summary: block.text ? [{ type: "summary_text", text: block.text }] : [], encrypted_content: encodeReasoning(block) };
}

export function messageItem(ulid: string, position: number, text: string, status: "completed" | "incomplete" | "in_progress"): Item {
  return { type: "message", id: itemId("msg", ulid, position), status, role: "assistant", content: [{ type: "output_text", text, annotations: [], logprobs: [] }] };
}

export function functionCallItem(ulid: string, position: number, call: ToolCall, status: "completed" | "in_progress" = "completed"): Item {
  return { type: "function_call", id: itemId("fc", ulid, position), call_id: call.id, name: call.name, arguments: JSON.stringify(call.arguments), status };
}

/** Thinking first, then the text (also when empty and nothing else was said, so output_text is ""), then the calls: the order the model produced them in. */
export function outputItems(ulid: string, out: ModelOutput): Item[] {
  const items: Item[] = [];
  for (const block of out.reasoning) items.push(reasoningItem(ulid, items.length, block));
  if (out.content !== "" || out.tool_calls.length === 0) items.push(messageItem(ulid, items.length, out.content, out.finish_reason === "length" ? "incomplete" : "completed"));
  for (const call of out.tool_calls) items.push(functionCallItem(ulid, items.length, call));
  return items;
}

export function statusOf(finish: FinishReason): { status: ResponseStatus; incomplete_details: { reason: "max_output_tokens" | "content_filter" } | null } {
  if (finish === "length") return { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } };
  if (finish === "content_filter") return { status: "incomplete", incomplete_details: { reason: "content_filter" } };
  return { status: "completed", incomplete_details: null };
}

export function usageOf(out: Pick<ModelOutput, "input_tokens" | "output_tokens" | "extras">) {
  return {
    input_tokens: out.input_tokens,
    input_tokens_details: { cached_tokens: out.extras?.cached_input_tokens ?? 0 },
    output_tokens: out.output_tokens,
    output_tokens_details: { reasoning_tokens: out.extras?.reasoning_tokens ?? 0 },
    total_tokens: out.input_tokens + out.output_tokens,
  };
}

export interface ResponseFrame {
  id: string;
  createdSeconds: number;
  body: ResponseCreateBody;
  store: boolean;
}

/** The fields that do not depend on the answer: what the request asked for, echoed as OpenAI does. */
export function responseObject(frame: ResponseFrame, fields: { status: ResponseStatus; model: string; output: Item[]; usage: ReturnType<typeof usageOf> | null; error?: { code: string; message: string } | null; incomplete_details?: unknown }): Item {
  const { body } = frame;
  return {
    id: frame.id,
    object: "response",
    created_at: frame.createdSeconds,
    status: fields.status,
    background: body.background === true,
    error: fields.error ?? null,
    incomplete_details: fields.incomplete_details ?? null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    max_tool_calls: body.max_tool_calls ?? null,
    model: fields.model,
    output: fields.output,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    conversation: body.conversation ? { id: typeof body.conversation === "string" ? body.conversation : body.conversation.id } : null,
    reasoning: { effort: body.reasoning?.effort ?? null, summary: body.reasoning?.summary ?? null },
    service_tier: "default",
    store: frame.store,
    temperature: body.temperature ?? 1,
    text: { format: body.text?.format ?? { type: "text" }, verbosity: body.text?.verbosity ?? "medium" },
    tool_choice: body.tool_choice ?? "auto",
    tools: (body.tools ?? []).map((t) => ({ type: "function", name: t.name, description: t.description ?? null, parameters: t.parameters ?? null, strict: t.strict ?? true })),
    top_p: body.top_p ?? 1,
    truncation: body.truncation ?? "disabled",
    usage: fields.usage,
    user: body.user ?? null,
    metadata: body.metadata ?? {},
  };
}
