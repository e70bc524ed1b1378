// Anthropic messages: request mapping (system apart, tool results first in
// the user turn, consecutive same-role turns merged, an assistant turn's own
// thinking blocks first, cache breakpoints), zod schemas of the answers,
// JSON transform and SSE transform (message_start … message_stop), with
// thinking as extras.reasoning / reasoning events and the prompt-cache
// counts as extras.
import { z } from "zod";
import type { ChatMessage, ChatRequest } from "../chat-request.ts";
import type { ChatExtras, ReasoningBlock, StreamEvent, ToolCall, UpstreamChat, UpstreamChatStream } from "../types.ts";
import { ProviderCallError } from "../errors.ts";
import { send, sendForJson } from "../upstream-request.ts";
import { cutStream, parseSse, parseSseJson } from "../sse.ts";
import { parseToolArguments } from "../tool-arguments.ts";
import { hintsFor } from "../provider-hints.ts";
import { parseUpstream } from "../parse-upstream.ts";
import { anthropicHeaders, anthropicUrls, type AnthropicApiConfig } from "./api.ts";
import { mapAnthropicFinishReason } from "./map-anthropic-finish-reason.ts";

type CacheControl = { type: "ephemeral"; ttl?: "5m" | "1h" | undefined };
type Block = (
  | { type: "text"; text: string }
  | { type: "image"; source: { type: "url"; url: string } | { type: "base64"; media_type: string; data: string } }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> }
  | { type: "tool_result"; tool_use_id: string; content: string }
  | { type: "thinking"; thinking: string; signature: string }
  | { type: "redacted_thinking"; data: string }
) & { cache_control?: CacheControl };
type Turn = { role: "user" | "assistant"; content: Block[] };
type SystemBlock = { type: "text"; text: string; cache_control?: CacheControl };

const cacheControlOf = (cache: ChatMessage["cache"]): CacheControl => (cache?.ttl ? { type: "ephemeral", ttl: cache.ttl } : { type: "ephemeral" });

/**
 * The system prompt: one string, or (when a system message is a cache
 * breakpoint) one text block per system message, the breakpoint on its own.
 */
function systemOf(messages: ChatMessage[]): string | SystemBlock[] | undefined {
  const system = messages.filter((m) => m.role === "system");
  if (system.length === 0) return undefined;
  if (!system.some((m) => m.cache)) return system.map((m) => m.content).join("\n\n");
  return system.map((m): SystemBlock => (m.cache ? { type: "text", text: m.content, cache_control: cacheControlOf(m.cache) } : { type: "text", text: m.content }));
}

/** An assistant turn's thinking that this provider made, as it gave it (another provider's thinking cannot be checked here: dropped). */
function thinkingBlocks(provider: string, reasoning: ReasoningBlock[] | undefined): Block[] {
  return (reasoning ?? [])
    .filter((r) => r.provider === provider && (r.redacted !== undefined || r.signature !== undefined))
    .map((r): Block => (r.redacted !== undefined ? { type: "redacted_thinking", data: r.redacted } : { type: "thinking", thinking: r.text, signature: r.signature ?? "" }));
}

export function toAnthropicMessages(messages: ChatMessage[], provider = "anthropic"): { system: string | SystemBlock[] | undefined; turns: Turn[] } {
  const system = systemOf(messages);
  const conversation = messages.filter((m) => m.role !== "system");
  const turns: Turn[] = [];
  const push = (role: Turn["role"], blocks: Block[], toolResults = false): void => {
    const last = turns[turns.length - 1];
    if (last && last.role === role) {
      // Tool results must open the user turn, before any text.
      if (toolResults) {
        const firstNonResult = last.content.findIndex((b) => b.type !== "tool_result");
        if (firstNonResult === -1) last.content.push(...blocks);
        else last.content.splice(firstNonResult, 0, ...blocks);
      } else last.content.push(...blocks);
    } else turns.push({ role, content: blocks });
  };
  for (const m of conversation) {
    switch (m.role) {
      case "user": {
        const blocks: Block[] = (m.images ?? []).map(
          (img): Block => ({
            type: "image",
            source: "url" in img ? { type: "url", url: img.url } : { type: "base64", media_type: img.media_type, data: img.base64 },
          }),
        );
        if (m.content !== "" || blocks.length === 0) blocks.push({ type: "text", text: m.content });
        push("user", blocks);
        break;
      }
      case "assistant": {
        // Thinking opens the turn, before its text and tool calls, as Anthropic gave it.
        const blocks: Block[] = thinkingBlocks(provider, m.reasoning);
        if (m.content !== "") blocks.push({ type: "text", text: m.content });
        for (const c of m.tool_calls ?? []) blocks.push({ type: "tool_use", id: c.id, name: c.name, input: c.arguments });
        if (blocks.length === 0) blocks.push({ type: "text", text: "" });
        push("assistant", blocks);
        break;
      }
      case "tool":
        push("user", [{ type: "tool_result", tool_use_id: m.tool_call_id ?? "", content: m.content }], true);
        break;
    }
    if (m.cache) markCache(turns[turns.length - 1]!, m);
  }
  return { system, turns };
}

/** The breakpoint on the message's last block: its tool_result (which may stand before the turn's text), or the turn's last block. */
function markCache(turn: Turn, m: ChatMessage): void {
  const block = m.role === "tool" ? turn.content.find((b) => b.type === "tool_result" && b.tool_use_id === m.tool_call_id) : turn.content[turn.content.length - 1];
  if (block) block.cache_control = cacheControlOf(m.cache);
}

/** Anthropic's smallest thinking budget. */
const minBudget = 1024;
/** An effort as a budget, for a request that gave no budget (OpenAI's reasoning_effort on a Claude model). */
const effortBudget = { minimal: 1024, low: 2048, medium: 8192, high: 16384 } as const;

/**
 * Anthropic's `thinking` for a request, or undefined for none: the budget
 * asked (or the effort's), under max_tokens as Anthropic requires. A budget
 * that does not fit, `off`, or a forced tool choice (which Anthropic refuses
 * with thinking) mean no thinking.
 */
export function thinkingOf(req: ChatRequest, maxTokens: number): { type: "enabled"; budget_tokens: number; display?: "omitted" } | undefined {
  const r = req.reasoning;
  if (!r || r.off) return undefined;
  if (req.tool_choice === "required" || (typeof req.tool_choice === "object" && req.tool_choice !== null)) return undefined;
  const asked = r.budget_tokens ?? (r.effort ? effortBudget[r.effort] : undefined);
  if (asked === undefined) return undefined;
  const budget = Math.min(asked, maxTokens - 1);
  if (budget < minBudget) return undefined;
  // Omitted thinking is signed over what Anthropic kept: it must be asked for upstream, so the empty block comes back valid.
  return r.display === "omitted" ? { type: "enabled", budget_tokens: budget, display: "omitted" } : { type: "enabled", budget_tokens: budget };
}

export function toAnthropicBody(cfg: AnthropicApiConfig, req: ChatRequest, model: string, stream: boolean): Record<string, unknown> {
  const { system, turns } = toAnthropicMessages(req.messages, cfg.provider);
  const maxTokens = req.max_tokens ?? cfg.defaultMaxTokens;
  const body: Record<string, unknown> = {
    model,
    max_tokens: maxTokens,
    messages: turns,
  };
  if (system !== undefined) body.system = system;
  const thinking = thinkingOf(req, maxTokens);
  if (thinking) body.thinking = thinking;
  // Anthropic refuses a temperature or top_p change with thinking on.
  // Its temperature range is 0..1: values above 1 are clamped to 1.
  if (req.temperature != null && !thinking) body.temperature = Math.min(1, req.temperature);
  if (req.top_p != null && !thinking) body.top_p = req.top_p;
  if (req.stop?.length) body.stop_sequences = req.stop;
  if (req.tools && req.tools.length > 0) {
    const toolCache = req.prompt_cache?.tool;
    body.tools = req.tools.map((t, i) =>
      i === toolCache?.index ? { name: t.name, description: t.description, input_schema: t.parameters, cache_control: cacheControlOf(toolCache) } : { name: t.name, description: t.description, input_schema: t.parameters },
    );
    const choice = req.tool_choice;
    if (choice === "none") body.tool_choice = { type: "none" };
    else if (choice === "required") body.tool_choice = { type: "any" };
    else if (choice === "auto") body.tool_choice = { type: "auto" };
    else if (choice != null) body.tool_choice = { type: "tool", name: choice.name };
    // parallel_tool_calls: false is Anthropic's disable_parallel_tool_use, on any choice but none (which calls no tool).
    if (hintsFor(req.hints, cfg.provider, model).parallel_tool_calls === false && choice !== "none") {
      body.tool_choice = { ...((body.tool_choice as Record<string, unknown> | undefined) ?? { type: "auto" }), disable_parallel_tool_use: true };
    }
  }
  // Anthropic's structured output (reached only for a model whose catalogue entry declares json_output).
  const format = req.response_format;
  if (format) body.output_config = { format: { type: "json_schema", schema: format.type === "json_schema" ? format.schema : { type: "object" } } };
  // Automatic caching: Anthropic puts the breakpoint on the last cacheable block, and moves it as the conversation grows.
  if (req.prompt_cache?.automatic) body.cache_control = cacheControlOf(req.prompt_cache.automatic);
  if (stream) body.stream = true;
  return body;
}

const contentBlockSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text"), text: z.string() }),
  z.object({ type: z.literal("tool_use"), id: z.string(), name: z.string(), input: z.unknown() }),
  z.object({ type: z.literal("thinking"), thinking: z.string(), signature: z.string() }).passthrough(),
  z.object({ type: z.literal("redacted_thinking"), data: z.string() }).passthrough(),
]);

const cacheCounts = {
  cache_creation_input_tokens: z.number().int().min(0).nullable().optional(),
  cache_read_input_tokens: z.number().int().min(0).nullable().optional(),
};

const responseSchema = z.object({
  model: z.string().optional(),
  content: z.array(contentBlockSchema),
  stop_reason: z.string().nullable().optional(),
  usage: z.object({ input_tokens: z.number().int(), output_tokens: z.number().int(), ...cacheCounts }).passthrough(),
});

type CacheCounts = { cache_creation_input_tokens?: number | null | undefined; cache_read_input_tokens?: number | null | undefined };

/** Anthropic counts cached input apart from input_tokens; Troupe counts it inside (ChatExtras). */
function cacheExtras(usage: CacheCounts): ChatExtras {
  const extras: ChatExtras = {};
  if (usage.cache_read_input_tokens != null) extras.cached_input_tokens = usage.cache_read_input_tokens;
  if (usage.cache_creation_input_tokens != null) extras.cache_write_input_tokens = usage.cache_creation_input_tokens;
  return extras;
}
const cachedTotal = (e: ChatExtras): number => (e.cached_input_tokens ?? 0) + (e.cache_write_input_tokens ?? 0);

const streamEventSchema = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("message_start"),
    message: z.object({
      model: z.string().optional(),
      usage: z.object({ input_tokens: z.number().int(), output_tokens: z.number().int().optional(), ...cacheCounts }).passthrough(),
    }),
  }),
  z.object({
    type: z.literal("content_block_start"),
    index: z.number().int(),
    content_block: z.object({ type: z.string(), id: z.string().optional(), name: z.string().optional(), data: z.string().optional() }).passthrough(),
  }),
  z.object({
    type: z.literal("content_block_delta"),
    index: z.number().int(),
    delta: z
      .object({ type: z.string(), text: z.string().optional(), partial_json: z.string().optional(), thinking: z.string().optional(), signature: z.string().optional() })
      .passthrough(),
  }),
  z.object({ type: z.literal("content_block_stop"), index: z.number().int() }),
  z.object({
    type: z.literal("message_delta"),
    delta: z.object({ stop_reason: z.string().nullable().optional() }).passthrough(),
    usage: z.object({ output_tokens: z.number().int(), input_tokens: z.number().int().nullable().optional(), ...cacheCounts }).passthrough().optional(),
  }),
  z.object({ type: z.literal("message_stop") }),
  z.object({ type: z.literal("ping") }),
  z.object({ type: z.literal("error"), error: z.object({ type: z.string(), message: z.string() }).passthrough() }),
]);

export const anthropicChat: UpstreamChat<AnthropicApiConfig> = async (cfg, client, req, opts) => {
  const answer = await sendForJson(cfg.provider, client, anthropicUrls.messages(cfg), {
    headers: anthropicHeaders(cfg),
    body: toAnthropicBody(cfg, req, opts.upstreamModel, false),
    signal: opts.signal,
  });
  const data = parseUpstream(cfg.provider, responseSchema, answer);
  let content = "";
  const toolCalls: ToolCall[] = [];
  const reasoning: ReasoningBlock[] = [];
  for (const block of data.content) {
    if (block.type === "text") content += block.text;
    else if (block.type === "tool_use") {
      toolCalls.push({ id: block.id, name: block.name, arguments: parseToolArguments(cfg.provider, block.input) });
    } else if (block.type === "thinking") reasoning.push({ provider: cfg.provider, text: block.thinking, signature: block.signature });
    else reasoning.push({ provider: cfg.provider, text: "", redacted: block.data });
  }
  const extras = cacheExtras(data.usage);
  if (reasoning.length > 0) extras.reasoning = reasoning;
  return {
    ...(Object.keys(extras).length > 0 ? { extras } : {}),
    content,
    finish_reason: mapAnthropicFinishReason(data.stop_reason),
    model: data.model ?? opts.upstreamModel,
    provider: cfg.provider,
    input_tokens: data.usage.input_tokens + cachedTotal(extras),
    output_tokens: data.usage.output_tokens,
    tool_calls: toolCalls.length > 0 ? toolCalls : null,
  };
};

export const anthropicChatStream: UpstreamChatStream<AnthropicApiConfig> = async function* (cfg, client, req, opts) {
  const body = await send(cfg.provider, client, anthropicUrls.messages(cfg), {
    headers: { ...anthropicHeaders(cfg), accept: "text/event-stream" },
    body: toAnthropicBody(cfg, req, opts.upstreamModel, true),
    signal: opts.signal,
  });
  const tools = new Map<number, { id: string; name: string; json: string }>();
  // Thinking blocks being streamed, by index: their text and signature so far (a redacted one: its data).
  const thinking = new Map<number, ReasoningBlock>();
  let cache: CacheCounts = {};
  let inputTokens = 0;
  let outputTokens = 0;
  let stopReason: string | null | undefined;
  let stopped = false;
  for await (const ev of parseSse(cfg.provider, body, opts.signal)) {
    // After message_stop the body is read to its end (keeps the connection reusable).
    if (stopped) continue;
    const e = parseUpstream(cfg.provider, streamEventSchema, parseSseJson(cfg.provider, ev.data));
    switch (e.type) {
      case "message_start":
        inputTokens = e.message.usage.input_tokens;
        outputTokens = e.message.usage.output_tokens ?? 0;
        cache = e.message.usage;
        break;
      case "content_block_start":
        if (e.content_block.type === "tool_use") {
          tools.set(e.index, { id: e.content_block.id ?? "", name: e.content_block.name ?? "", json: "" });
        } else if (e.content_block.type === "thinking") thinking.set(e.index, { provider: cfg.provider, text: "", signature: "" });
        else if (e.content_block.type === "redacted_thinking") thinking.set(e.index, { provider: cfg.provider, text: "", redacted: e.content_block.data ?? "" });
        break;
      case "content_block_delta":
        if (e.delta.type === "text_delta" && e.delta.text) yield { delta: e.delta.text };
        else if (e.delta.type === "input_json_delta") {
          const t = tools.get(e.index);
          if (t) t.json += e.delta.partial_json ?? "";
        } else if (e.delta.type === "thinking_delta" && e.delta.thinking) {
          const block = thinking.get(e.index);
          if (block) block.text += e.delta.thinking;
          yield { reasoning_delta: e.delta.thinking };
        } else if (e.delta.type === "signature_delta") {
          const block = thinking.get(e.index);
          if (block) block.signature = (block.signature ?? "") + (e.delta.signature ?? "");
        }
        break;
      case "content_block_stop": {
        const t = tools.get(e.index);
        if (t) yield { tool_call: { id: t.id, name: t.name, arguments: parseToolArguments(cfg.provider, t.json) } };
        const block = thinking.get(e.index);
        if (block) yield { reasoning_block: block } satisfies StreamEvent;
        break;
      }
      case "message_delta":
        if (e.delta.stop_reason !== undefined) stopReason = e.delta.stop_reason;
        if (e.usage) {
          outputTokens = e.usage.output_tokens;
          // The final counts, where the API gives them here too.
          if (e.usage.input_tokens != null) inputTokens = e.usage.input_tokens;
          cache = { cache_creation_input_tokens: e.usage.cache_creation_input_tokens ?? cache.cache_creation_input_tokens, cache_read_input_tokens: e.usage.cache_read_input_tokens ?? cache.cache_read_input_tokens };
        }
        break;
      case "message_stop":
        stopped = true;
        break;
      case "ping":
        break;
      case "error": {
        // overloaded_error and api_error are Anthropic's mid-stream 529/500.
        const retryable = e.error.type === "overloaded_error" || e.error.type === "api_error";
        throw new ProviderCallError(cfg.provider, retryable ? "connection" : "protocol", `${cfg.provider} stream error: ${e.error.message}`);
      }
    }
  }
  if (!stopped) throw cutStream(cfg.provider);
  const extras = cacheExtras(cache);
  yield {
    ...(Object.keys(extras).length > 0 ? { extras } : {}),
    finish_reason: mapAnthropicFinishReason(stopReason),
    input_tokens: inputTokens + cachedTotal(extras),
    output_tokens: outputTokens,
    model: opts.upstreamModel,
    provider: cfg.provider,
  };
};
