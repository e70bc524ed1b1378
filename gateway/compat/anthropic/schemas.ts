// The Anthropic Messages API's shapes as the /anthropic/v1 mount accepts and
// answers them: request bodies of POST /v1/messages and
// /v1/messages/count_tokens, the Message answer, and the error body. Unknown
// fields are refused (400 naming them), as Anthropic's API does;
// `cache_control` is accepted wherever Anthropic takes it and has no effect
// (nothing is cached).
import { z } from "zod";
import { uriString } from "../../../core/uri-schema.ts";

const cacheControl = z
  .object({ type: z.literal("ephemeral"), ttl: z.enum(["5m", "1h"]).optional() })
  .strict()
  .nullable()
  .optional();

export const textBlockSchema = z.object({ type: z.literal("text"), text: z.string(), cache_control: cacheControl }).strict();

const imageSourceSchema = z.discriminatedUnion("type", [
  z
    .object({
      type: z.literal("base64"),
      media_type: z.enum(["image/jpeg", "image/png", "image/gif", "image/webp"]),
      data: z.string().min(1),
    })
    .strict(),
  z.object({ type: z.literal("url"), url: uriString(20_000_000) }).strict(),
]);

export const imageBlockSchema = z.object({ type: z.literal("image"), source: imageSourceSchema, cache_control: cacheControl }).strict();

export const toolUseBlockSchema = z
  .object({
    type: z.literal("tool_use"),
    id: z.string().min(1),
    name: z.string().min(1),
    input: z.record(z.string(), z.unknown()),
    cache_control: cacheControl,
  })
  .strict();

export const toolResultBlockSchema = z
  .object({
    type: z.literal("tool_result"),
    tool_use_id: z.string().min(1),
    content: z.union([z.string(), z.array(z.discriminatedUnion("type", [textBlockSchema, imageBlockSchema]))]).optional(),
    is_error: z.boolean().optional(),
    cache_control: cacheControl,
  })
  .strict();

const contentBlockSchema = z.discriminatedUnion("type", [textBlockSchema, imageBlockSchema, toolUseBlockSchema, toolResultBlockSchema]);
export type ContentBlockParam = z.infer<typeof contentBlockSchema>;

export const messageParamSchema = z
  .object({
    role: z.enum(["user", "assistant"]),
    content: z.union([z.string(), z.array(contentBlockSchema)]),
  })
  .strict();
export type MessageParam = z.infer<typeof messageParamSchema>;

export const toolSchema = z
  .object({
    type: z.literal("custom").optional(),
    name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "1-64 letters, digits, _ or -"),
    description: z.string().optional(),
    // A JSON Schema of the tool's input; Anthropic requires an object schema.
    input_schema: z.object({ type: z.literal("object") }).catchall(z.unknown()),
    cache_control: cacheControl,
  })
  .strict();

const parallel = { disable_parallel_tool_use: z.boolean().optional() };
export const toolChoiceSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("auto"), ...parallel }).strict(),
  z.object({ type: z.literal("any"), ...parallel }).strict(),
  z.object({ type: z.literal("tool"), name: z.string().min(1), ...parallel }).strict(),
  z.object({ type: z.literal("none") }).strict(),
]);

/** What count_tokens and messages share: the conversation and its tools. */
const conversationFields = {
  model: z.string().min(1),
  messages: z.array(messageParamSchema).min(1),
  system: z.union([z.string(), z.array(textBlockSchema)]).optional(),
  tools: z.array(toolSchema).optional(),
  tool_choice: toolChoiceSchema.optional(),
};

export const countTokensBodySchema = z.object(conversationFields).strict();
export type CountTokensBody = z.infer<typeof countTokensBodySchema>;

export const messagesBodySchema = z
  .object({
    ...conversationFields,
    // Required, as Anthropic requires it: it is also what a budget reserves for the answer.
    max_tokens: z.number().int().min(1).max(1_000_000),
    temperature: z.number().min(0).max(1).optional(),
    // Accepted and not applied: no Troupe provider adapter takes them (docs/guides/anthropic-compatible.md).
    top_p: z.number().min(0).max(1).optional(),
    top_k: z.number().int().min(0).optional(),
    // Applied by the gateway: the answer is cut at the first one (stop-sequences.ts).
    stop_sequences: z.array(z.string().min(1)).max(16).optional(),
    metadata: z.object({ user_id: z.string().max(256).nullable().optional() }).strict().optional(),
    stream: z.boolean().optional(),
  })
  .strict();
export type MessagesBody = z.infer<typeof messagesBodySchema>;

export const stopReasonSchema = z.enum(["end_turn", "max_tokens", "stop_sequence", "tool_use", "refusal"]);
export type StopReason = z.infer<typeof stopReasonSchema>;

export const responseTextBlockSchema = z.object({ type: z.literal("text"), text: z.string() });
export const responseToolUseBlockSchema = z.object({
  type: z.literal("tool_use"),
  id: z.string(),
  name: z.string(),
  input: z.record(z.string(), z.unknown()),
});
export type ResponseBlock = z.infer<typeof responseTextBlockSchema> | z.infer<typeof responseToolUseBlockSchema>;

export const messageSchema = z.object({
  id: z.string(),
  type: z.literal("message"),
  role: z.literal("assistant"),
  model: z.string(),
  content: z.array(z.union([responseTextBlockSchema, responseToolUseBlockSchema])),
  stop_reason: stopReasonSchema.nullable(),
  stop_sequence: z.string().nullable(),
  usage: z.object({ input_tokens: z.number().int().min(0), output_tokens: z.number().int().min(0) }),
});
export type AnthropicMessage = z.infer<typeof messageSchema>;

export const countTokensResultSchema = z.object({ input_tokens: z.number().int().min(0) });

export const errorTypeSchema = z.enum([
  "invalid_request_error",
  "authentication_error",
  "billing_error",
  "permission_error",
  "not_found_error",
  "request_too_large",
  "rate_limit_error",
  "api_error",
  "timeout_error",
  "overloaded_error",
]);
export type ErrorType = z.infer<typeof errorTypeSchema>;

export const errorBodySchema = z.object({
  type: z.literal("error"),
  error: z.object({ type: errorTypeSchema, message: z.string() }),
  request_id: z.string(),
});
