// The body of POST /openai/v1/responses (OpenAI's ResponseCreateParams, the
// part Troupe serves; docs/guides/responses.md). Items are read tolerantly
// (clients send back output items with fields of their own: `status`,
// `annotations`, `logprobs`), the top level strictly: a field OpenAI has and
// Troupe does not serve is a 400 naming it, never silently dropped.
import { z } from "zod";
import { uriString } from "../../../../core/uri-schema.ts";
import { routingStrategySchema } from "../../../../providers/types.ts";

/** Bounds before anything is translated: items per request, text per part (the body cap bounds the rest). */
export const MAX_INPUT_ITEMS = 10_000;

const inputText = z.object({ type: z.literal("input_text"), text: z.string() });
const inputImage = z.object({
  type: z.literal("input_image"),
  image_url: uriString(20_000_000).nullable().optional(),
  file_id: z.string().nullable().optional(),
  detail: z.enum(["auto", "low", "high", "original"]).nullable().optional(),
});
const inputFile = z.object({
  type: z.literal("input_file"),
  file_data: z.string().optional(),
  file_id: z.string().nullable().optional(),
  file_url: z.string().optional(),
  filename: z.string().optional(),
});
/** What an assistant message sent back holds (the output of an earlier response). */
const outputText = z.object({ type: z.literal("output_text"), text: z.string() });
const refusal = z.object({ type: z.literal("refusal"), refusal: z.string() });
const contentPart = z.discriminatedUnion("type", [inputText, inputImage, inputFile, outputText, refusal]);
export type ContentPart = z.infer<typeof contentPart>;

const messageItem = z.object({
  type: z.literal("message"),
  id: z.string().optional(),
  role: z.enum(["user", "assistant", "system", "developer"]),
  content: z.union([z.string(), z.array(contentPart)]),
});
const functionCallItem = z.object({
  type: z.literal("function_call"),
  id: z.string().optional(),
  call_id: z.string().min(1),
  name: z.string().min(1),
  arguments: z.string(),
});
const functionCallOutputItem = z.object({
  type: z.literal("function_call_output"),
  id: z.string().nullable().optional(),
  call_id: z.string().min(1),
  output: z.union([z.string(), z.array(z.discriminatedUnion("type", [inputText, inputImage, inputFile]))]),
});
const reasoningItem = z.object({
  type: z.literal("reasoning"),
  id: z.string().optional(),
  summary: z.array(z.object({ type: z.literal("summary_text"), text: z.string() })).default([]),
  encrypted_content: z.string().nullable().optional(),
});
const itemReference = z.object({ type: z.literal("item_reference"), id: z.string().min(1) });

/** An easy message (`{role, content}`) has no type, nor has a reference (`{id}`): both are given theirs before the union decides. */
export const inputItem = z.preprocess(
  (item) => {
    if (typeof item !== "object" || item === null || Array.isArray(item) || "type" in item) return item;
    return "role" in item ? { ...item, type: "message" } : { ...item, type: "item_reference" };
  },
  z.discriminatedUnion("type", [messageItem, functionCallItem, functionCallOutputItem, reasoningItem, itemReference]),
);
export type InputItem = z.infer<typeof inputItem>;

const functionTool = z.object({
  type: z.literal("function"),
  name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "1-64 letters, digits, _ or -"),
  description: z.string().nullable().optional(),
  parameters: z.record(z.string(), z.unknown()).nullable().optional(),
  strict: z.boolean().nullable().optional(),
});
const toolChoice = z.union([z.enum(["auto", "none", "required"]), z.object({ type: z.literal("function"), name: z.string().min(1) })]);

const textFormat = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text") }),
  z.object({ type: z.literal("json_object") }),
  z.object({
    type: z.literal("json_schema"),
    name: z.string().min(1),
    schema: z.record(z.string(), z.unknown()),
    description: z.string().optional(),
    strict: z.boolean().nullable().optional(),
  }),
]);

export const responseCreateSchema = z
  .object({
    model: z.string().min(1),
    input: z.union([z.string(), z.array(inputItem).max(MAX_INPUT_ITEMS)]).optional(),
    instructions: z.string().nullable().optional(),
    tools: z.array(functionTool).optional(),
    tool_choice: toolChoice.optional(),
    parallel_tool_calls: z.boolean().nullable().optional(),
    max_tool_calls: z.number().int().min(1).nullable().optional(),
    previous_response_id: z.string().min(1).nullable().optional(),
    conversation: z.union([z.string().min(1), z.object({ id: z.string().min(1) })]).nullable().optional(),
    store: z.boolean().nullable().optional(),
    background: z.boolean().nullable().optional(),
    stream: z.boolean().nullable().optional(),
    stream_options: z.object({ include_obfuscation: z.boolean().optional() }).nullable().optional(),
    max_output_tokens: z.number().int().min(1).max(1_000_000).nullable().optional(),
    temperature: z.number().min(0).max(2).nullable().optional(),
    top_p: z.number().min(0).max(1).nullable().optional(),
    text: z.object({ format: textFormat.optional(), verbosity: z.enum(["low", "medium", "high"]).nullable().optional() }).optional(),
    reasoning: z
      .object({
        effort: z.enum(["none", "minimal", "low", "medium", "high", "xhigh"]).nullable().optional(),
        summary: z.enum(["auto", "concise", "detailed"]).nullable().optional(),
        generate_summary: z.enum(["auto", "concise", "detailed"]).nullable().optional(),
      })
      .nullable()
      .optional(),
    metadata: z.record(z.string().max(64), z.string().max(512)).refine((m) => Object.keys(m).length <= 16, "at most 16 pairs").nullable().optional(),
    include: z.array(z.string()).nullable().optional(),
    truncation: z.enum(["auto", "disabled"]).nullable().optional(),
    user: z.string().optional(),
    safety_identifier: z.string().nullable().optional(),
    prompt_cache_key: z.string().nullable().optional(),
    prompt_cache_retention: z.string().nullable().optional(),
    service_tier: z.string().nullable().optional(),
    client_metadata: z.record(z.string(), z.unknown()).nullable().optional(),
    /** Troupe's extension (the SDKs pass it as an extra body field): how to route a named model. */
    routing_strategy: routingStrategySchema.optional(),
  })
  .strict();
export type ResponseCreateBody = z.infer<typeof responseCreateSchema>;

/** Accepted, not sent to any provider (gateway/compat/ignored-params.ts): they change how OpenAI runs a request, not the answer. */
export const ignorableResponseFields = [
  "parallel_tool_calls",
  "max_tool_calls",
  "include",
  "truncation",
  "user",
  "safety_identifier",
  "prompt_cache_key",
  "prompt_cache_retention",
  "service_tier",
  "stream_options",
  "client_metadata",
] as const;

/** The body of POST /openai/v1/responses/input_tokens: what a create would send, counted. */
export const inputTokensSchema = responseCreateSchema
  .pick({ model: true, input: true, instructions: true, tools: true, tool_choice: true, previous_response_id: true, conversation: true, text: true, reasoning: true, parallel_tool_calls: true, truncation: true })
  .partial({ model: true })
  .strict();
export type InputTokensBody = z.infer<typeof inputTokensSchema>;
