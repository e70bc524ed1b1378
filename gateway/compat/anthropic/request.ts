// Anthropic Messages request → Troupe's one chat request
// (providers/chat-request.ts), which the router sends to any provider: the
// system prompt becomes a system message, a user turn's tool_result blocks
// become tool messages (before the turn's text, as Anthropic orders them),
// an assistant turn's tool_use blocks its tool_calls, image blocks the
// message's images (the router then wants a vision-capable model), thinking
// blocks the assistant message's reasoning (sent back to the provider that
// made them), `thinking` and `output_config` the request's reasoning and
// response_format. What a schema cannot say is checked here, naming the
// field; what is accepted and not sent is listed by ignoredFields.
import { invalidRequest, isTroupeError, TroupeError } from "../../../core/errors.ts";
import type { Catalogue } from "../../../providers/catalogue.ts";
import type { ChatMessage, ChatRequest, JsonResponseFormat, PromptCacheRequest, ReasoningRequest, ToolChoice } from "../../../providers/chat-request.ts";
import type { ImageInput, ReasoningBlock, ToolCall, ToolDefinition } from "../../../providers/types.ts";
import { ignoredParams } from "../ignored-params.ts";
import { ignorableFields, isCustomTool, type CacheControl, type ContentBlockParam, type CountTokensBody, type MessageParam, type MessagesBody } from "./schemas.ts";
import { fromThinkingBlock } from "./thinking.ts";

/** Anthropic answers an unknown model with 404 not_found_error; so does this mount. */
export function requireModel(catalogue: Catalogue, model: string): void {
  if (!catalogue.get(model)) throw new TroupeError("not_found", `model: ${model} (GET /v1/models lists the catalogue)`);
}

type Conversation = Pick<CountTokensBody, "messages" | "system" | "tools" | "tool_choice">;

const cacheOf = (c: CacheControl): ChatMessage["cache"] => (c ? (c.ttl ? { ttl: c.ttl } : {}) : undefined);

/** The conversation part (shared with count_tokens). */
export function toChatConversation(body: Conversation): Pick<ChatRequest, "messages" | "tools" | "tool_choice"> {
  const messages: ChatMessage[] = [];
  const system = typeof body.system === "string" ? body.system : body.system?.map((b) => b.text).join("\n");
  if (system) {
    const cache = typeof body.system === "string" ? undefined : cacheOf(body.system?.findLast((b) => b.cache_control)?.cache_control);
    messages.push(cache ? { role: "system", content: system, cache } : { role: "system", content: system });
  }
  // tool_use ids not yet answered: a tool_result must answer one (named by its Anthropic path here, not the router's).
  const open = new Set<string>();
  body.messages.forEach((m, i) => messages.push(...toChatMessages(m, i, open)));
  const tools: ToolDefinition[] | undefined = body.tools?.filter(isCustomTool).map((t) => ({ name: t.name, description: t.description ?? "", parameters: t.input_schema }));
  return { messages, tools, tool_choice: toolChoiceOf(body.tool_choice) };
}

export function toChatRequest(body: MessagesBody): ChatRequest {
  refuseUnhonourable(body);
  const request: ChatRequest = {
    ...toChatConversation(body),
    model: body.model,
    // The named model first, then its equivalents at other providers when it fails (as /v1's default).
    routing_strategy: "auto",
    max_tokens: body.max_tokens,
    temperature: body.temperature,
    top_p: body.top_p,
  };
  const reasoning = reasoningOf(body);
  if (reasoning) request.reasoning = reasoning;
  const format = body.output_config?.format ?? body.output_format;
  if (format) request.response_format = jsonSchemaFormat(format.schema);
  const promptCache = promptCacheOf(body);
  if (promptCache) request.prompt_cache = promptCache;
  // Sent on to the providers that take it (Anthropic, OpenAI); routes.ts also keeps one call in the answer, for the others.
  if (body.tool_choice && "disable_parallel_tool_use" in body.tool_choice && body.tool_choice.disable_parallel_tool_use === true) request.hints = { parallel_tool_calls: false };
  return request;
}

/** The breakpoints outside the messages: the last tool that has one (it caches the tools before it), and the top-level (automatic) one. */
function promptCacheOf(body: MessagesBody): PromptCacheRequest | undefined {
  const index = body.tools?.findLastIndex((t) => "cache_control" in t && t.cache_control) ?? -1;
  const tool = index >= 0 ? body.tools?.[index] : undefined;
  // A parsed tool is custom (server tools are refused), so the index is the same in the request's tools.
  const toolCache = tool && isCustomTool(tool) ? cacheOf(tool.cache_control) : undefined;
  const automatic = cacheOf(body.cache_control);
  if (!toolCache && !automatic) return undefined;
  return { ...(toolCache ? { tool: { ...toolCache, index } } : {}), ...(automatic ? { automatic } : {}) };
}

/**
 * The router names the fields of Troupe's request (a model that cannot give
 * a JSON answer: body.response_format); this mount's client sent
 * output_config.format (or output_format), so its 400 says that.
 */
export function inMountTerms(error: unknown, body: MessagesBody): unknown {
  if (!isTroupeError(error) || error.code !== "invalid_request" || body.output_config?.format == null && body.output_format == null) return error;
  const field = body.output_config?.format != null ? "output_config.format" : "output_format";
  const rename = (text: string): string => text.replaceAll("response_format", field);
  const details = Array.isArray(error.details)
    ? (error.details as unknown[]).map((d) => (typeof d === "object" && d !== null ? Object.fromEntries(Object.entries(d).map(([k, v]) => [k, typeof v === "string" ? rename(v) : v])) : d))
    : error.details;
  return new TroupeError(error.code, rename(error.message), { details, cause: error, headers: error.headers });
}

/** Anthropic's structured output has no name; OpenAI's needs one (the router sends it to models that declare json_output). */
function jsonSchemaFormat(schema: Record<string, unknown>): JsonResponseFormat {
  return { type: "json_schema", name: "output", schema, strict: true };
}

/** Anthropic's efforts above high are Troupe's high: the most any provider's effort goes. */
const efforts = { low: "low", medium: "medium", high: "high", xhigh: "high", max: "high" } as const;

/**
 * `thinking` and `output_config.effort` → ChatRequest.reasoning: a budget
 * stays a budget, adaptive is an effort (Anthropic's default, high, when
 * none is given), disabled is off. An effort with no thinking field still
 * asks for that effort.
 */
export function reasoningOf(body: Pick<MessagesBody, "thinking" | "output_config">): ReasoningRequest | undefined {
  const effort = body.output_config?.effort ? efforts[body.output_config.effort] : undefined;
  // Omitted thinking: the answer shows the blocks without their text (the signatures still go back).
  const shown = body.thinking && "display" in body.thinking && body.thinking.display === "omitted" ? { display: "omitted" as const } : {};
  switch (body.thinking?.type) {
    case "disabled":
      return { off: true };
    case "enabled":
      return effort ? { budget_tokens: body.thinking.budget_tokens, effort, ...shown } : { budget_tokens: body.thinking.budget_tokens, ...shown };
    case "adaptive":
      return { effort: effort ?? "high", ...shown };
    case "between_tools":
      return { effort: effort ?? "high" };
    case undefined:
      return effort ? { effort } : undefined;
  }
}

/** Fields that would change the answer in a way no Troupe provider can honour: a 400 naming each. */
function refuseUnhonourable(body: MessagesBody): void {
  if (body.mcp_servers !== undefined && body.mcp_servers.length > 0) {
    throw invalidRequest([{ path: "body.mcp_servers", message: "Troupe connects to no MCP server; declare the tools the model may call in tools" }]);
  }
  if (body.thread !== undefined && body.thread !== null) {
    throw invalidRequest([{ path: "body.thread", message: "server-side threads are not supported; send the conversation in messages" }]);
  }
  if (body.max_tokens !== undefined && body.thinking?.type === "enabled" && body.thinking.budget_tokens >= body.max_tokens) {
    throw invalidRequest([{ path: "body.thinking.budget_tokens", message: `must be less than max_tokens (${body.max_tokens})` }]);
  }
}

/**
 * What was accepted and not sent, for troupe-ignored-params: the
 * provider-only fields, the `anthropic-beta` header, `top_k` (no adapter
 * takes it), `thinking.display` other than `omitted` (thinking is shown as
 * the provider gives it; `omitted` is honoured for every provider), and
 * `cache_control` — on messages, the system prompt, tools or the top level —
 * unless `provider` is Anthropic (the others cache prompts on their own).
 */
export function ignoredFields(body: MessagesBody, headers: Readonly<Record<string, string>>, provider: string | undefined): string[] {
  const names = ignoredParams(body, ignorableFields);
  if (body.mcp_servers !== undefined) names.push("mcp_servers");
  if (headers["anthropic-beta"] !== undefined) names.push("anthropic-beta");
  if (body.top_k !== undefined) names.push("top_k");
  if (body.thinking && "display" in body.thinking && body.thinking.display != null && body.thinking.display !== "omitted") names.push("thinking.display");
  if (body.output_config?.task_budget != null) names.push("output_config.task_budget");
  const onTools = body.tools?.some((t) => "cache_control" in t && t.cache_control) ?? false;
  if ((body.cache_control || onTools || hasTurnCache(body)) && provider !== "anthropic") names.push("cache_control");
  return names;
}

function hasTurnCache(body: MessagesBody): boolean {
  if (typeof body.system !== "string" && body.system?.some((b) => b.cache_control)) return true;
  return body.messages.some((m) => typeof m.content !== "string" && m.content?.some((b) => "cache_control" in b && b.cache_control));
}

function toolChoiceOf(choice: Conversation["tool_choice"]): ToolChoice | undefined {
  switch (choice?.type) {
    case undefined:
      return undefined;
    case "auto":
      return "auto";
    case "any":
      return "required";
    case "none":
      return "none";
    case "tool":
      return { name: choice.name };
  }
}

function toChatMessages(m: MessageParam, index: number, open: Set<string>): ChatMessage[] {
  if (m.role === "system") {
    const content = m.content === undefined ? "" : typeof m.content === "string" ? m.content : m.content.map((b) => b.text).join("\n");
    const cache = typeof m.content === "string" ? undefined : cacheOf(m.content?.findLast((b) => b.cache_control)?.cache_control);
    return content === "" ? [] : [cache ? { role: "system", content, cache } : { role: "system", content }];
  }
  if (typeof m.content === "string") return [{ role: m.role, content: m.content }];
  const at = (j: number) => `body.messages.${index}.content.${j}`;
  const texts: string[] = [];
  const images: ImageInput[] = [];
  const toolCalls: ToolCall[] = [];
  const results: ChatMessage[] = [];
  const reasoning: ReasoningBlock[] = [];
  let cache: ChatMessage["cache"];
  (m.content as ContentBlockParam[]).forEach((block, j) => {
    if ("cache_control" in block && block.cache_control) cache = cacheOf(block.cache_control);
    switch (block.type) {
      case "text":
        texts.push(block.text);
        return;
      case "image":
        if (m.role !== "user") throw invalidRequest([{ path: at(j), message: "image blocks belong in user messages" }]);
        images.push(block.source.type === "base64" ? { base64: block.source.data, media_type: block.source.media_type } : { url: block.source.url });
        return;
      case "thinking":
      case "redacted_thinking":
        if (m.role !== "assistant") throw invalidRequest([{ path: at(j), message: `${block.type} blocks belong in assistant messages` }]);
        reasoning.push(fromThinkingBlock(block, at(j)));
        return;
      case "tool_use":
        if (m.role !== "assistant") throw invalidRequest([{ path: at(j), message: "tool_use blocks belong in assistant messages" }]);
        toolCalls.push({ id: block.id, name: block.name, arguments: block.input });
        open.add(block.id);
        return;
      case "tool_result":
        if (m.role !== "user") throw invalidRequest([{ path: at(j), message: "tool_result blocks belong in user messages" }]);
        if (!open.delete(block.tool_use_id)) {
          throw invalidRequest([{ path: `${at(j)}.tool_use_id`, message: `no earlier tool_use block has id ${block.tool_use_id} (or it was already answered)` }]);
        }
        results.push({ role: "tool", tool_call_id: block.tool_use_id, content: toolResultText(block, at(j)) });
        return;
    }
  });
  const out: ChatMessage[] = [...results];
  const content = texts.join("\n");
  let last: ChatMessage | undefined;
  if (m.role === "assistant") {
    last = { role: "assistant", content, tool_calls: toolCalls.length > 0 ? toolCalls : null };
    if (reasoning.length > 0) last.reasoning = reasoning;
  } else if (content !== "" || images.length > 0 || results.length === 0) {
    last = images.length > 0 ? { role: "user", content, images } : { role: "user", content };
  }
  if (last) out.push(last);
  // The breakpoint goes after the turn's last message (a turn of tool results only: after the last result).
  const end = out[out.length - 1];
  if (cache && end) end.cache = cache;
  return out;
}

function toolResultText(block: Extract<ContentBlockParam, { type: "tool_result" }>, path: string): string {
  let text: string;
  if (block.content === undefined) text = "";
  else if (typeof block.content === "string") text = block.content;
  else {
    if (block.content.some((b) => b.type === "image")) {
      throw invalidRequest([{ path: `${path}.content`, message: "images inside tool_result are not supported; send them in a user text turn" }]);
    }
    text = block.content.map((b) => (b.type === "text" ? b.text : "")).join("\n");
  }
  // Troupe's tool messages have no error flag: the model reads it from the text.
  return block.is_error ? `Error: ${text}` : text;
}
