// The one chat request type (docs/api/chat.md), from the HTTP
// route through the router to every adapter. The route validates its body
// with `chatRequestSchema` (plus its own `stream` flag) and hands the parsed
// value on as it is: no mapping, no copy per request. Two transforms do the
// normalizing a mapper used to do (null content → "", the OpenAI form of
// tool_choice → `{ name }`); OpenAPI documents the input side of them.
import { z } from "zod";
import { routingStrategySchema, toolCallSchema, toolDefinitionSchema, type ImageInput, type RoutingStrategy, type ToolCall } from "./types.ts";

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
