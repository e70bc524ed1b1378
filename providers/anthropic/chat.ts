// Anthropic messages: request mapping (system apart, tool results first in
// the user turn, consecutive same-role turns merged), zod schemas of the
// answers, JSON transform and SSE transform (message_start … message_stop).
import { z } from "zod";
import { systemApart, type ChatMessage, type ChatRequest } from "../chat-request.ts";
import type { ChatResult, ToolCall, UpstreamChat, UpstreamChatStream } from "../types.ts";
import { ProviderCallError } from "../errors.ts";
import { send, sendForJson } from "../upstream-request.ts";
import { cutStream, parseSse, parseSseJson } from "../sse.ts";
import { parseToolArguments } from "../tool-arguments.ts";
import { parseUpstream } from "../parse-upstream.ts";
import { anthropicHeaders, anthropicUrls, type AnthropicApiConfig } from "./api.ts";
import { mapAnthropicFinishReason } from "./map-anthropic-finish-reason.ts";

type Block =
  | { type: "text"; text: string }
  | { type: "image"; source: { type: "url"; url: string } | { type: "base64"; media_type: string; data: string } }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> }
  | { type: "tool_result"; tool_use_id: string; content: string };
type Turn = { role: "user" | "assistant"; content: Block[] };

export function toAnthropicMessages(messages: ChatMessage[]): { system: string | undefined; turns: Turn[] } {
  const { system, conversation } = systemApart(messages);
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
        const blocks: Block[] = [];
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
  }
  return { system, turns };
}

export function toAnthropicBody(cfg: AnthropicApiConfig, req: ChatRequest, model: string, stream: boolean): Record<string, unknown> {
  const { system, turns } = toAnthropicMessages(req.messages);
  const body: Record<string, unknown> = {
    model,
    max_tokens: req.max_tokens ?? cfg.defaultMaxTokens,
    messages: turns,
  };
  if (system !== undefined) body.system = system;
  // Anthropic's temperature range is 0..1: values above 1 are clamped to 1.
  if (req.temperature != null) body.temperature = Math.min(1, req.temperature);
  if (req.top_p != null) body.top_p = req.top_p;
  if (req.stop?.length) body.stop_sequences = req.stop;
  if (req.tools && req.tools.length > 0) {
    body.tools = req.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters }));
    const choice = req.tool_choice;
    if (choice === "none") body.tool_choice = { type: "none" };
    else if (choice === "required") body.tool_choice = { type: "any" };
    else if (choice === "auto") body.tool_choice = { type: "auto" };
    else if (choice != null) body.tool_choice = { type: "tool", name: choice.name };
  }
  if (stream) body.stream = true;
  return body;
}

const contentBlockSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text"), text: z.string() }),
  z.object({ type: z.literal("tool_use"), id: z.string(), name: z.string(), input: z.unknown() }),
  z.object({ type: z.literal("thinking") }).passthrough(),
  z.object({ type: z.literal("redacted_thinking") }).passthrough(),
]);

const responseSchema = z.object({
  model: z.string().optional(),
  content: z.array(contentBlockSchema),
  stop_reason: z.string().nullable().optional(),
  usage: z.object({ input_tokens: z.number().int(), output_tokens: z.number().int() }).passthrough(),
});

const streamEventSchema = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("message_start"),
    message: z.object({
      model: z.string().optional(),
      usage: z.object({ input_tokens: z.number().int(), output_tokens: z.number().int().optional() }).passthrough(),
    }),
  }),
  z.object({
    type: z.literal("content_block_start"),
    index: z.number().int(),
    content_block: z.object({ type: z.string(), id: z.string().optional(), name: z.string().optional() }).passthrough(),
  }),
  z.object({
    type: z.literal("content_block_delta"),
    index: z.number().int(),
    delta: z.object({ type: z.string(), text: z.string().optional(), partial_json: z.string().optional() }).passthrough(),
  }),
  z.object({ type: z.literal("content_block_stop"), index: z.number().int() }),
  z.object({
    type: z.literal("message_delta"),
    delta: z.object({ stop_reason: z.string().nullable().optional() }).passthrough(),
    usage: z.object({ output_tokens: z.number().int() }).passthrough().optional(),
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
  for (const block of data.content) {
    if (block.type === "text") content += block.text;
    else if (block.type === "tool_use") {
      toolCalls.push({ id: block.id, name: block.name, arguments: parseToolArguments(cfg.provider, block.input) });
    }
  }
  return {
    content,
    finish_reason: mapAnthropicFinishReason(data.stop_reason),
    model: data.model ?? opts.upstreamModel,
    provider: cfg.provider,
    input_tokens: data.usage.input_tokens,
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
        break;
      case "content_block_start":
        if (e.content_block.type === "tool_use") {
          tools.set(e.index, { id: e.content_block.id ?? "", name: e.content_block.name ?? "", json: "" });
        }
        break;
      case "content_block_delta":
        if (e.delta.type === "text_delta" && e.delta.text) yield { delta: e.delta.text };
        else if (e.delta.type === "input_json_delta") {
          const t = tools.get(e.index);
          if (t) t.json += e.delta.partial_json ?? "";
        }
        break;
      case "content_block_stop": {
        const t = tools.get(e.index);
        if (t) yield { tool_call: { id: t.id, name: t.name, arguments: parseToolArguments(cfg.provider, t.json) } };
        break;
      }
      case "message_delta":
        if (e.delta.stop_reason !== undefined) stopReason = e.delta.stop_reason;
        if (e.usage) outputTokens = e.usage.output_tokens;
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
  yield {
    finish_reason: mapAnthropicFinishReason(stopReason),
    input_tokens: inputTokens,
    output_tokens: outputTokens,
    model: opts.upstreamModel,
    provider: cfg.provider,
  };
};
