// The normalized shapes every provider adapter speaks (ToolCall, Tool
// definition, Chat result; docs/api/chat.md); the chat
// request itself is in chat-request.ts. The HTTP layer validates request
// bodies with these schemas and generates OpenAPI from them (their input side).
import { z } from "zod";
import type { ChatRequest } from "./chat-request.ts";
import type { MediaAdapterMethods } from "./media-types.ts";
import type { UpstreamClient } from "./upstream-request.ts";

export const routingStrategySchema = z.enum(["auto", "manual", "cost", "latency"]);
export type RoutingStrategy = z.infer<typeof routingStrategySchema>;

export const finishReasonSchema = z.enum(["stop", "length", "tool_calls", "content_filter", "error"]);
export type FinishReason = z.infer<typeof finishReasonSchema>;

export const toolCallSchema = z
  .object({
    id: z.string().min(1),
    name: z.string().min(1),
    arguments: z.record(z.string(), z.unknown()),
  })
  .strict();
export type ToolCall = z.infer<typeof toolCallSchema>;

/** An image attached to a user message (vision). Not part of the public chat body. */
export const imageInputSchema = z.union([
  z.object({ url: z.string().min(1) }).strict(),
  z.object({ base64: z.string().min(1), media_type: z.string().min(1) }).strict(),
]);
export type ImageInput = z.infer<typeof imageInputSchema>;

export const toolDefinitionSchema = z
  .object({
    name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "1-64 letters, digits, _ or -"),
    description: z.string().default(""),
    parameters: z.record(z.string(), z.unknown()).default({ type: "object", properties: {} }),
  })
  .strict();
export type ToolDefinition = z.infer<typeof toolDefinitionSchema>;

export const chatResultSchema = z.object({
  content: z.string(),
  finish_reason: finishReasonSchema,
  model: z.string(),
  provider: z.string(),
  input_tokens: z.number().int().min(0),
  output_tokens: z.number().int().min(0),
  tool_calls: z.array(toolCallSchema).nullable(),
});
/**
 * One block of a model's thinking, as its provider gave it: the text (empty
 * when redacted), and what must go back unchanged on the next turn for the
 * provider to accept it (Anthropic's `signature` or `redacted_thinking`
 * data, Gemini's `thoughtSignature`). `provider` says whose it is: a block
 * is sent back only to that provider.
 */
export interface ReasoningBlock {
  provider: string;
  text: string;
  signature?: string | undefined;
  /** Anthropic's `redacted_thinking.data`: encrypted thinking with no text. */
  redacted?: string | undefined;
}

/**
 * What a provider says beyond the /v1 result. The compatible mounts show it
 * in their own shapes; /v1 does not (its body is the spec's, so its route
 * drops `extras`). Token counts are parts of `input_tokens`/`output_tokens`,
 * never added to them.
 */
export interface ChatExtras {
  reasoning?: ReasoningBlock[] | undefined;
  /** Input tokens read from the provider's prompt cache. */
  cached_input_tokens?: number | undefined;
  /** Input tokens written to the provider's prompt cache (Anthropic's cache_creation_input_tokens). */
  cache_write_input_tokens?: number | undefined;
  /** Output tokens spent thinking. */
  reasoning_tokens?: number | undefined;
  /** Served with the calling organization's own provider key (docs/operations/byok.md): billed at the BYOK price. */
  byok?: true | undefined;
}

export type ChatResult = z.infer<typeof chatResultSchema> & { extras?: ChatExtras | undefined };

/** Stream events, exactly the SSE `data:` payloads (docs/api/chat.md, "Streaming (SSE) format"). */
export const streamDeltaSchema = z.object({ delta: z.string() });
export const streamToolCallSchema = z.object({ tool_call: toolCallSchema });
export const streamFinishSchema = z.object({
  finish_reason: finishReasonSchema,
  input_tokens: z.number().int().min(0),
  output_tokens: z.number().int().min(0),
  model: z.string(),
  provider: z.string(),
});
export const streamErrorSchema = z.object({ error: z.object({ code: z.string(), message: z.string() }) });
export const streamEventSchema = z.union([streamDeltaSchema, streamToolCallSchema, streamFinishSchema, streamErrorSchema]);
export type StreamDelta = z.infer<typeof streamDeltaSchema>;
export type StreamToolCall = z.infer<typeof streamToolCallSchema>;
export type StreamFinish = z.infer<typeof streamFinishSchema> & { extras?: ChatExtras | undefined };
export type StreamError = z.infer<typeof streamErrorSchema>;
/**
 * Thinking as it streams: text deltas, then the block's signature (or a
 * redacted block whole). Only the compatible mounts send these on; /v1's
 * stream has no such event and skips them.
 */
export type StreamReasoning = { reasoning_delta: string } | { reasoning_block: ReasoningBlock };
/** What adapters and the router yield; errors are thrown, the route renders them. */
export type StreamEvent = StreamDelta | StreamToolCall | StreamFinish | StreamReasoning;

export function isReasoning(e: StreamEvent): e is StreamReasoning {
  return "reasoning_delta" in e || "reasoning_block" in e;
}

export function isFinish(e: StreamEvent): e is StreamFinish {
  return "finish_reason" in e;
}

/** Body of POST /v1/embeddings (docs/api/embeddings-and-vector-index.md). */
export const embeddingRequestSchema = z
  .object({
    input: z.union([z.string().min(1), z.array(z.string().min(1)).min(1).max(2048)]),
    model: z.string().min(1).nullable().optional(),
    routing_strategy: routingStrategySchema.default("auto"),
    dimensions: z.number().int().min(1).max(8192).nullable().optional(),
  })
  .strict();
export type EmbeddingRequest = z.infer<typeof embeddingRequestSchema>;

export interface EmbedRequest {
  model: string;
  input: string[];
  dimensions?: number | null | undefined;
  /** Cohere needs it; others ignore it. */
  input_type?: "search_document" | "search_query" | undefined;
}

export const embedResultSchema = z.object({
  embeddings: z.array(z.array(z.number())),
  dimensions: z.number().int(),
  model: z.string(),
  provider: z.string(),
  input_tokens: z.number().int().min(0),
});
export type EmbedResult = z.infer<typeof embedResultSchema>;

/** Per-call options every adapter honours. */
export interface CallOptions {
  signal: AbortSignal;
}

export interface ChatCallOptions extends CallOptions {
  /** The model this attempt calls, in the provider's own naming (the catalogue's upstream_model, else its id). */
  upstreamModel: string;
}

/**
 * A provider adapter. Capabilities it lacks are simply absent. `provider` is
 * the name results report (e.g. "openai", or an openai-compatible endpoint's name).
 */
export interface ProviderAdapter extends MediaAdapterMethods {
  readonly provider: string;
  chat?(req: ChatRequest, opts: ChatCallOptions): Promise<ChatResult>;
  chatStream?(req: ChatRequest, opts: ChatCallOptions): AsyncIterable<StreamEvent>;
  embed?(req: EmbedRequest, opts: CallOptions): Promise<EmbedResult>;
  close?(): Promise<void>;
}

/** One chat call of an HTTP adapter, given its API config and upstream client (its index binds both into `chat`). */
export type UpstreamChat<Cfg> = (cfg: Cfg, client: UpstreamClient, req: ChatRequest, opts: ChatCallOptions) => Promise<ChatResult>;
/** The streaming form (bound into `chatStream`): deltas and tool calls, then one finish event. */
export type UpstreamChatStream<Cfg> = (cfg: Cfg, client: UpstreamClient, req: ChatRequest, opts: ChatCallOptions) => AsyncGenerator<StreamEvent>;
