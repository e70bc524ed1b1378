// The items of an OpenAI-API conversation, in the Conversations API's shapes
// (node_modules/openai/resources/conversations/*.d.ts): what a caller may
// send (a Responses API input item: `message` with input_text / output_text /
// input_image / input_file / refusal parts, `function_call`,
// `function_call_output`, `reasoning`) and the stored item it becomes, with
// its own id (`msg_`, `fc_`, `fco_`, `rs_`) and status. Tolerant as the
// compatible mounts are: fields OpenAI adds are kept; a wrong type or a
// missing required field is a 400 naming it.
import { z } from "zod";
import { ulid } from "../../../../core/ids.ts";

const maxTextChars = 1024 * 1024;
export const itemIdSchema = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, "letters, digits, '_' and '-', at most 128");

const textPart = (type: "input_text" | "output_text") => z.looseObject({ type: z.literal(type), text: z.string().max(maxTextChars) });
const contentPart = z.discriminatedUnion("type", [
  textPart("input_text"),
  textPart("output_text"),
  z.looseObject({ type: z.literal("input_image"), image_url: z.string().nullish(), file_id: z.string().nullish(), detail: z.enum(["low", "high", "auto", "original"]).default("auto") }),
  z.looseObject({ type: z.literal("input_file"), file_id: z.string().nullish(), file_data: z.string().optional(), file_url: z.string().optional(), filename: z.string().optional() }),
  z.looseObject({ type: z.literal("refusal"), refusal: z.string().max(maxTextChars) }),
]);

const messageItem = z.looseObject({
  type: z.literal("message").default("message"),
  id: itemIdSchema.optional(),
  role: z.enum(["user", "assistant", "system", "developer"]),
  content: z.union([z.string().max(maxTextChars), z.array(contentPart).max(1000)]),
  status: z.enum(["in_progress", "completed", "incomplete"]).optional(),
});

const functionCallItem = z.looseObject({
  type: z.literal("function_call"),
  id: itemIdSchema.optional(),
  call_id: z.string().min(1).max(256),
  name: z.string().min(1).max(256),
  arguments: z.string().max(maxTextChars),
  status: z.enum(["in_progress", "completed", "incomplete"]).optional(),
});

const functionCallOutputItem = z.looseObject({
  type: z.literal("function_call_output"),
  id: itemIdSchema.nullish(),
  call_id: z.string().min(1).max(256),
  output: z.union([z.string().max(maxTextChars), z.array(z.looseObject({ type: z.string() })).max(1000)]),
  status: z.enum(["in_progress", "completed", "incomplete"]).nullish(),
});

const reasoningItem = z.looseObject({
  type: z.literal("reasoning"),
  id: itemIdSchema.optional(),
  summary: z.array(z.looseObject({ type: z.literal("summary_text"), text: z.string() })).default([]),
  encrypted_content: z.string().nullish(),
  content: z.array(z.looseObject({ type: z.literal("reasoning_text"), text: z.string() })).optional(),
});

/** One input item (a message without `type` is a message, as the Responses API takes it). */
export const inputItemSchema = z.union([messageItem, z.discriminatedUnion("type", [functionCallItem, functionCallOutputItem, reasoningItem])]);
export type InputItem = z.infer<typeof inputItemSchema>;

/** At most this many items per create call (OpenAI's limit). */
export const MAX_ITEMS_PER_CALL = 20;
export const inputItemsSchema = z.array(inputItemSchema).max(MAX_ITEMS_PER_CALL, `at most ${MAX_ITEMS_PER_CALL} items per call`);

const idPrefix = { message: "msg", function_call: "fc", function_call_output: "fco", reasoning: "rs" } as const;

/** A fresh item id: its type's prefix and a ULID (ordered, ≥ 80 random bits). */
export function newItemId(type: keyof typeof idPrefix, nowMs: number): string {
  return `${idPrefix[type]}_${ulid(nowMs).toLowerCase()}`;
}

export type ConversationItem = Record<string, unknown> & { id: string; type: string };

/** The stored item an input item becomes: an id (the caller's, or a fresh one), a status, a message's string content as one text part. */
export function toConversationItem(input: InputItem, nowMs: number): ConversationItem {
  switch (input.type) {
    case "message": {
      const content = typeof input.content === "string" ? [{ type: input.role === "assistant" ? "output_text" : "input_text", text: input.content }] : input.content;
      const parts = content.map((p) => (p.type === "output_text" ? { annotations: [], logprobs: [], ...p } : p));
      return { ...input, id: input.id ?? newItemId("message", nowMs), type: "message", status: input.status ?? "completed", content: parts };
    }
    case "function_call":
      return { ...input, id: input.id ?? newItemId("function_call", nowMs), status: input.status ?? "completed" };
    case "function_call_output":
      return { ...input, id: input.id ?? newItemId("function_call_output", nowMs), status: input.status ?? "completed" };
    case "reasoning":
      return { ...input, id: input.id ?? newItemId("reasoning", nowMs) };
  }
}

/** The item's stored size: its JSON in UTF-8 bytes (what the per-conversation byte bound counts). */
export function itemBytes(item: ConversationItem): number {
  return Buffer.byteLength(JSON.stringify(item));
}

/** The document's view of an item: an object with its id and type (the SDKs type the rest). */
export const conversationItemSchema = z.looseObject({ id: z.string(), type: z.string() });
