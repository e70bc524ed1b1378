// The Anthropic Messages API's shapes as the /anthropic/v1 mount accepts and
// answers them: request bodies of POST /v1/messages and
// /v1/messages/count_tokens, the Message answer, and the error body. Unknown
// fields are refused (400 naming them), as Anthropic's API does; every
// field of the SDK's MessageCreateParams (beta ones included) is known, and
// request.ts says per field what becomes of it (docs/guides/anthropic-compatible.md).
import { z } from "zod";
import { uriString } from "../../../core/uri-schema.ts";

// Prompt caching: sent on to Anthropic (a breakpoint where the block is);
// other providers cache automatically or not at all, so there it is listed
// in troupe-ignored-params (request.ts).
const cacheControl = z
  .object({ type: z.literal("ephemeral"), ttl: z.enum(["5m", "1h"]).optional() })
  .strict()
  .nullable()
  .optional();
export type CacheControl = z.infer<typeof cacheControl>;

// Citations of earlier answers' text: what was cited does not change the next answer.
const citations = z.array(z.looseObject({ type: z.string() })).nullable().optional();

export const textBlockSchema = z.object({ type: z.literal("text"), text: z.string(), cache_control: cacheControl, citations }).strict();

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
    // Who called it (the model directly, or a server tool): the call is the same call.
    caller: z.looseObject({ type: z.string() }).optional(),
    toolset_name: z.string().nullable().optional(),
  })
  .strict();

export const toolResultBlockSchema = z
  .object({
    type: z.literal("tool_result"),
    tool_use_id: z.string().min(1),
    content: z.union([z.string(), z.array(z.discriminatedUnion("type", [textBlockSchema, imageBlockSchema]))]).optional(),
    is_error: z.boolean().optional(),
    cache_control: cacheControl,
    toolset_name: z.string().nullable().optional(),
  })
  .strict();

// An earlier answer's thinking, returned as the API gave it: its signature
// (or redacted data) is what lets the provider that made it check it.
export const thinkingBlockSchema = z.object({ type: z.literal("thinking"), thinking: z.string(), signature: z.string() }).strict();
export const redactedThinkingBlockSchema = z.object({ type: z.literal("redacted_thinking"), data: z.string().min(1) }).strict();

/** Block types of Anthropic's API that need what Troupe does not run (documents, server tools, MCP, containers): a 400 naming the type. */
export const unsupportedBlockTypes = [
  "document",
  "search_result",
  "server_tool_use",
  "web_search_tool_result",
  "web_fetch_tool_result",
  "advisor_tool_result",
  "code_execution_tool_result",
  "bash_code_execution_tool_result",
  "text_editor_code_execution_tool_result",
  "tool_search_tool_result",
  "mcp_tool_use",
  "mcp_tool_result",
  "container_upload",
  "compaction",
  "tool_addition",
  "tool_removal",
  "mcp_tool_listing",
  "fallback",
] as const;

const unsupportedBlockSchema = z.looseObject({ type: z.enum(unsupportedBlockTypes) }).superRefine((block, ctx) => {
  ctx.addIssue({ code: "custom", path: ["type"], message: `${block.type} blocks are not supported by Troupe (no document, server-tool, MCP or container support)` });
});

const contentBlockSchema = z.discriminatedUnion("type", [
  textBlockSchema,
  imageBlockSchema,
  toolUseBlockSchema,
  toolResultBlockSchema,
  thinkingBlockSchema,
  redactedThinkingBlockSchema,
  unsupportedBlockSchema,
]);
export type ContentBlockParam = Exclude<z.infer<typeof contentBlockSchema>, z.infer<typeof unsupportedBlockSchema>>;

const conversationMessageSchema = z
  .object({
    role: z.enum(["user", "assistant"]),
    content: z.union([z.string(), z.array(contentBlockSchema)]),
  })
  .strict();

// A system turn inside `messages` (Claude Code sends one when the model is not a Claude name): a system message where it stands.
const systemMessageSchema = z
  .object({
    role: z.literal("system"),
    content: z.union([z.string(), z.array(textBlockSchema)]).optional(),
    // When Anthropic drops the turn from later context: a single request has no later context.
    clear_at: z.enum(["next_user_message", "never"]).nullable().optional(),
  })
  .strict();

export const messageParamSchema = z.discriminatedUnion("role", [conversationMessageSchema, systemMessageSchema]);
export type MessageParam = z.infer<typeof messageParamSchema>;

export const customToolSchema = z
  .object({
    type: z.literal("custom").nullable().optional(),
    name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "1-64 letters, digits, _ or -"),
    description: z.string().optional(),
    // A JSON Schema of the tool's input; Anthropic requires an object schema.
    input_schema: z.object({ type: z.literal("object") }).catchall(z.unknown()),
    cache_control: cacheControl,
    // How Anthropic loads and streams the tool (tool search, eager input, examples, callers): the tool's calls are the same.
    defer_loading: z.boolean().optional(),
    eager_input_streaming: z.boolean().nullable().optional(),
    input_examples: z.array(z.record(z.string(), z.unknown())).optional(),
    allowed_callers: z.array(z.string()).optional(),
    strict: z.boolean().optional(),
  })
  .strict();

/** Anthropic's server tools (run by Anthropic, not the caller): Troupe runs none, so each is a 400 naming it. */
export const serverToolTypes = [
  "advisor_20260301",
  "bash_20241022",
  "bash_20250124",
  "browser_toolset_20260801",
  "code_execution_20250522",
  "code_execution_20250825",
  "code_execution_20260120",
  "code_execution_20260521",
  "computer_20241022",
  "computer_20250124",
  "computer_20251124",
  "computer_toolset_20260801",
  "mcp_toolset",
  "memory_20250818",
  "text_editor_20241022",
  "text_editor_20250124",
  "text_editor_20250429",
  "text_editor_20250728",
  "tool_search_tool_bm25_20251119",
  "tool_search_tool_bm25",
  "tool_search_tool_regex_20251119",
  "tool_search_tool_regex",
  "web_fetch_20250910",
  "web_fetch_20260209",
  "web_fetch_20260309",
  "web_fetch_20260318",
  "web_search_20250305",
  "web_search_20260209",
  "web_search_20260318",
] as const;

const serverToolSchema = z.looseObject({ type: z.enum(serverToolTypes) }).superRefine((tool, ctx) => {
  ctx.addIssue({ code: "custom", path: ["type"], message: `${tool.type} is an Anthropic server tool, which Troupe does not run; declare a custom tool (name, input_schema) instead` });
});

export const toolSchema = z.discriminatedUnion("type", [customToolSchema, serverToolSchema]);
export type CustomTool = z.infer<typeof customToolSchema>;
/** A parsed tool is always custom (a server tool is refused while parsing); this tells the type system so. */
export const isCustomTool = (t: z.infer<typeof toolSchema>): t is CustomTool => t.type === undefined || t.type === null || t.type === "custom";

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

// thinking: a budget, adaptive (the model decides; output_config.effort says how hard), or off.
// `display` says whether the answer shows the thinking's text; `block_binding` how Anthropic checks returned blocks.
const thinkingShown = {
  display: z.enum(["summarized", "omitted", "updates"]).nullable().optional(),
  block_binding: z.looseObject({}).nullable().optional(),
};
export const thinkingSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("enabled"), budget_tokens: z.number().int().min(1024), ...thinkingShown }).strict(),
  z.object({ type: z.literal("adaptive"), ...thinkingShown }).strict(),
  z.object({ type: z.literal("between_tools") }).strict(),
  z.object({ type: z.literal("disabled") }).strict(),
]);
export type ThinkingParam = z.infer<typeof thinkingSchema>;

const jsonOutputFormat = z.object({ type: z.literal("json_schema"), schema: z.record(z.string(), z.unknown()) }).strict();

export const outputConfigSchema = z
  .object({
    effort: z.enum(["low", "medium", "high", "xhigh", "max"]).nullable().optional(),
    format: jsonOutputFormat.nullable().optional(),
    // A budget across an agent's whole task: one request is one step of it.
    task_budget: z.looseObject({}).nullable().optional(),
  })
  .strict();

/**
 * Fields that change only how the provider works, never what the answer is:
 * accepted, not sent, named in troupe-ignored-params (in this order).
 * Their shapes are Anthropic's to check; here only that they are JSON values.
 */
export const ignorableFields = [
  "metadata",
  "service_tier",
  "container",
  "context_management",
  "compaction",
  "inference_geo",
  "speed",
  "diagnostics",
  "fallbacks",
  "fallback_credit_token",
  "billing_policy",
  "user_profile_id",
  "workspace_id",
] as const;

const ignorable = Object.fromEntries(ignorableFields.map((name) => [name, z.unknown().optional()])) as Record<(typeof ignorableFields)[number], z.ZodOptional<z.ZodUnknown>>;

export const countTokensBodySchema = z
  .object({ ...conversationFields, thinking: thinkingSchema.optional(), output_config: outputConfigSchema.optional(), ...ignorable, cache_control: cacheControl, mcp_servers: z.array(z.unknown()).optional() })
  .strict();
export type CountTokensBody = z.infer<typeof countTokensBodySchema>;

export const messagesBodySchema = z
  .object({
    ...conversationFields,
    // Required, as Anthropic requires it: it is also what a budget reserves for the answer.
    max_tokens: z.number().int().min(1).max(1_000_000),
    temperature: z.number().min(0).max(1).optional(),
    top_p: z.number().min(0).max(1).optional(),
    // Accepted and not applied: no Troupe provider adapter takes it (docs/guides/anthropic-compatible.md).
    top_k: z.number().int().min(0).optional(),
    // Applied by the gateway: the answer is cut at the first one (stop-sequences.ts).
    stop_sequences: z.array(z.string().min(1)).max(16).optional(),
    stream: z.boolean().optional(),
    thinking: thinkingSchema.optional(),
    output_config: outputConfigSchema.optional(),
    // The beta's older spelling of output_config.format.
    output_format: jsonOutputFormat.nullable().optional(),
    // Automatic prompt caching (a breakpoint at the last cacheable block).
    cache_control: cacheControl,
    // Remote MCP servers whose tools the model may call: Troupe connects to none, so a non-empty list is refused (request.ts).
    mcp_servers: z.array(z.unknown()).optional(),
    // A server-side conversation thread: the answer would depend on turns Troupe does not have.
    thread: z.unknown().optional(),
    ...ignorable,
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
export const responseThinkingBlockSchema = z.object({ type: z.literal("thinking"), thinking: z.string(), signature: z.string() });
export const responseRedactedThinkingBlockSchema = z.object({ type: z.literal("redacted_thinking"), data: z.string() });
export type ResponseBlock =
  | z.infer<typeof responseTextBlockSchema>
  | z.infer<typeof responseToolUseBlockSchema>
  | z.infer<typeof responseThinkingBlockSchema>
  | z.infer<typeof responseRedactedThinkingBlockSchema>;

export const usageSchema = z.object({
  input_tokens: z.number().int().min(0),
  output_tokens: z.number().int().min(0),
  // Prompt-cache counts, whichever provider answered (an OpenAI or Gemini model's cached tokens are cache reads).
  cache_creation_input_tokens: z.number().int().min(0).nullable(),
  cache_read_input_tokens: z.number().int().min(0).nullable(),
});
export type Usage = z.infer<typeof usageSchema>;

export const messageSchema = z.object({
  id: z.string(),
  type: z.literal("message"),
  role: z.literal("assistant"),
  model: z.string(),
  content: z.array(z.union([responseThinkingBlockSchema, responseRedactedThinkingBlockSchema, responseTextBlockSchema, responseToolUseBlockSchema])),
  stop_reason: stopReasonSchema.nullable(),
  stop_sequence: z.string().nullable(),
  usage: usageSchema,
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
