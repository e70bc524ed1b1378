// The one chat request type (docs/api/chat.md), from the HTTP
// route through the router to every adapter. The route validates its body
// with `chatRequestSchema` (plus its own `stream` flag) and hands the parsed
// value on as it is: no mapping, no copy per request. Two transforms do the
// normalizing a mapper used to do (null content → "", the OpenAI form of
// tool_choice → `{ name }`); OpenAPI documents the input side of them.
import { z } from "zod";
import { routingStrategySchema, toolCallSchema, toolDefinitionSchema, type ImageInput, type ReasoningBlock, type RoutingStrategy, type ToolCall } from "./types.ts";

// OpenAI clients send null content on an assistant message that only calls tools.
const messageFields = {
  id: z.string().optional(),
  content: z
    .string()
    .nullable()
    .default("")
    .transform((c) => c ?? ""),
};

/**
 * A message, one shape per role (OpenAPI: `oneOf`): only assistant messages
 * carry `tool_calls`, and a tool message must name the call it answers. What
 * a schema cannot say (that the call exists earlier) is validate-chat.ts.
 */
export const chatMessageSchema = z.discriminatedUnion("role", [
  z.object({ role: z.literal("system"), ...messageFields }).strict(),
  z.object({ role: z.literal("user"), ...messageFields }).strict(),
  z.object({ role: z.literal("assistant"), ...messageFields, tool_calls: z.array(toolCallSchema).nullable().optional() }).strict(),
  z.object({ role: z.literal("tool"), ...messageFields, tool_call_id: z.string().min(1) }).strict(),
]);

/** "auto" (model decides), "none", "required" (some tool), or one named tool (also accepted in OpenAI's form). */
export const toolChoiceSchema = z.union([
  z.enum(["auto", "none", "required"]),
  z.object({ name: z.string().min(1) }).strict(),
  z
    .object({ type: z.literal("function"), function: z.object({ name: z.string().min(1) }).strict() })
    .strict()
    .transform((c) => ({ name: c.function.name })),
]);
export type ToolChoice = z.infer<typeof toolChoiceSchema>;

/** A chat request (the body of POST /v1/chat/completions without `stream`). Unknown fields are refused. */
export const chatRequestSchema = z
  .object({
    messages: z.array(chatMessageSchema).min(1),
    model: z.string().min(1).nullable().optional(),
    routing_strategy: routingStrategySchema.default("auto"),
    max_tokens: z.number().int().min(1).max(1_000_000).nullable().optional(),
    temperature: z.number().min(0).max(2).nullable().optional(),
    tools: z.array(toolDefinitionSchema).nullable().optional(),
    tool_choice: toolChoiceSchema.nullable().optional(),
  })
  .strict();

type ParsedChatRequest = z.infer<typeof chatRequestSchema>;

/**
 * A message as adapters see it: a parsed one (each role's shape fits it), or
 * one an internal caller built. Vision attaches images to a user message;
 * the public body has no such field (it refuses it).
 */
export interface ChatMessage {
  id?: string | undefined;
  role: ParsedChatRequest["messages"][number]["role"];
  content: string;
  tool_calls?: ToolCall[] | null | undefined;
  tool_call_id?: string | null | undefined;
  images?: ImageInput[] | undefined;
  /** An assistant turn's thinking, sent back to the provider that made it (a mount keeps it from the answer). */
  reasoning?: ReasoningBlock[] | undefined;
  /** A prompt-cache breakpoint after this message (Anthropic's cache_control); adapters of providers that cache on their own ignore it. */
  cache?: CacheBreakpoint | undefined;
}

/**
 * What the router and adapters take: the parsed request, whose messages may
 * carry images, with routing_strategy left to its default ("auto") by
 * internal callers. Adapters ignore the routing fields (`model` is the
 * caller's catalogue id or none; the model an attempt calls is in
 * ChatCallOptions.upstreamModel).
 */
export type ChatRequest = Omit<ParsedChatRequest, "messages" | "routing_strategy"> & {
  messages: ChatMessage[];
  routing_strategy?: RoutingStrategy | undefined;
} & SamplingOptions;

/**
 * Controls the OpenAI-compatible mount (gateway/compat/openai/) passes on;
 * not in /v1's body. Each adapter maps those its provider takes and ignores
 * the rest (Anthropic has no seed); `response_format` is routed only to
 * models whose catalogue entry declares `json_output`.
 */
export interface SamplingOptions {
  top_p?: number | null | undefined;
  stop?: string[] | undefined;
  seed?: number | null | undefined;
  response_format?: JsonResponseFormat | undefined;
  /** How much to think first; the mounts translate their fields into it (docs/guides/compat-fields.md), adapters into theirs. */
  reasoning?: ReasoningRequest | undefined;
  /** Knobs only some providers take (providers/provider-hints.ts says which); /v1 never sets them. */
  hints?: ProviderHints | undefined;
  /** Prompt-cache breakpoints beyond the messages' (Anthropic's cache_control on a tool, and at the top level); providers that cache on their own ignore them. */
  prompt_cache?: PromptCacheRequest | undefined;
}

/** A cache breakpoint's lifetime (Anthropic: 5 minutes unless 1 h is asked). */
export type CacheBreakpoint = { ttl?: "5m" | "1h" | undefined };

/**
 * Where the prompt cache ends besides the messages' breakpoints: after the
 * tool at `index` of `tools` (the tools before it are cached with it), and
 * `automatic`: the provider places the breakpoint on the last cacheable
 * block itself (Anthropic's top-level cache_control).
 */
export interface PromptCacheRequest {
  tool?: (CacheBreakpoint & { index: number }) | undefined;
  automatic?: CacheBreakpoint | undefined;
}

/**
 * OpenAI chat's fields that tune how an answer is made, never its shape:
 * sent to a provider that takes them (in its own form), else dropped and
 * named in the mount's troupe-ignored-params header. A fallback to another
 * provider is still a valid answer without them.
 */
export interface ProviderHints {
  /** false: at most one tool call per turn (Anthropic's tool_choice.disable_parallel_tool_use). */
  parallel_tool_calls?: boolean | undefined;
  verbosity?: "low" | "medium" | "high" | undefined;
  presence_penalty?: number | undefined;
  frequency_penalty?: number | undefined;
  /** Token id (as a string) → bias, -100..100, in the provider's own tokenizer. */
  logit_bias?: Record<string, number> | undefined;
}

/**
 * A request to think: an effort (OpenAI's `reasoning_effort`), or a token
 * budget (Anthropic's `thinking.budget_tokens`, Gemini's `thinkingBudget`),
 * or both; `off` asks a model that thinks by default not to. An adapter
 * maps whichever its provider takes, converting the other.
 */
export interface ReasoningRequest {
  effort?: "minimal" | "low" | "medium" | "high" | undefined;
  budget_tokens?: number | undefined;
  off?: boolean | undefined;
  /** "omitted": the answer's thinking blocks carry no text, only what goes back (signatures); Anthropic's thinking.display. */
  display?: "omitted" | undefined;
}

/** A JSON answer: any JSON object, or one matching `schema`. */
export type JsonResponseFormat = { type: "json_object" } | { type: "json_schema"; name: string; schema: Record<string, unknown>; strict?: boolean | undefined };

/**
 * For APIs that take the system prompt apart from the turns (Anthropic's
 * `system`, Gemini's `systemInstruction`): every system message's content,
 * joined by a blank line (undefined when there is none), and the other
 * messages in their order.
 */
export function systemApart(messages: ChatMessage[]): { system: string | undefined; conversation: ChatMessage[] } {
  const system = messages.filter((m) => m.role === "system").map((m) => m.content);
  return { system: system.length > 0 ? system.join("\n\n") : undefined, conversation: messages.filter((m) => m.role !== "system") };
}
