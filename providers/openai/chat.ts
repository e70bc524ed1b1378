// OpenAI chat completions: request mapping, zod schemas of the upstream
// answers, the JSON transform and the SSE stream transform.
import { z } from "zod";
import type { ChatMessage, ChatRequest, ReasoningRequest } from "../chat-request.ts";
import type { ChatExtras, ChatResult, ToolCall, UpstreamChat, UpstreamChatStream } from "../types.ts";
import { parseUpstream } from "../parse-upstream.ts";
import { send, sendForJson } from "../upstream-request.ts";
import { cutStream, parseSse, parseSseJson } from "../sse.ts";
import { parseToolArguments } from "../tool-arguments.ts";
import { hintsFor } from "../provider-hints.ts";
import { openaiHeaders, openaiUrls, type OpenAIApiConfig } from "./api.ts";
import { mapOpenAIFinishReason } from "./map-openai-finish-reason.ts";

type OpenAIContentPart = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string } };
type OpenAIMessage =
  | { role: "system" | "user"; content: string | OpenAIContentPart[] }
  | {
      role: "assistant";
      content: string | null;
      tool_calls?: { id: string; type: "function"; function: { name: string; arguments: string } }[];
    }
  | { role: "tool"; tool_call_id: string; content: string };

export function toOpenAIMessages(messages: ChatMessage[], toolCallId: (id: string) => string = (id) => id): OpenAIMessage[] {
  return messages.map((m): OpenAIMessage => {
    switch (m.role) {
      case "system":
        return { role: "system", content: m.content };
      case "user":
        if (!m.images || m.images.length === 0) return { role: "user", content: m.content };
        return {
          role: "user",
          content: [
            { type: "text", text: m.content },
            ...m.images.map((img): OpenAIContentPart => ({
              type: "image_url",
              image_url: { url: "url" in img ? img.url : `data:${img.media_type};base64,${img.base64}` },
            })),
          ],
        };
      case "assistant": {
        const msg: OpenAIMessage = { role: "assistant", content: m.content === "" && m.tool_calls?.length ? null : m.content };
        if (m.tool_calls && m.tool_calls.length > 0) {
          msg.tool_calls = m.tool_calls.map((c) => ({
            id: toolCallId(c.id),
            type: "function",
            function: { name: c.name, arguments: JSON.stringify(c.arguments) },
          }));
        }
        return msg;
      }
      case "tool":
        return { role: "tool", tool_call_id: toolCallId(m.tool_call_id ?? ""), content: m.content };
    }
  });
}

/** OpenAI's reasoning models (o1, o3, o4-mini…, the gpt-5 family) take reasoning_effort; the others refuse it. */
export function isReasoningModel(model: string): boolean {
  return /^(o\d|gpt-5)/.test(model);
}

/**
 * A reasoning request as OpenAI's `reasoning_effort`, for a reasoning model.
 * A token budget (Anthropic's form) becomes the nearest effort. `off`: the
 * o-series cannot stop thinking (nothing is sent), gpt-5 thinks least at
 * `minimal`, gpt-5.1 and later take `none`.
 */
export function reasoningEffortFor(model: string, reasoning: ReasoningRequest | undefined): string | undefined {
  if (!reasoning || !isReasoningModel(model)) return undefined;
  if (reasoning.off) return model.startsWith("o") ? undefined : /^gpt-5(-|$)/.test(model) ? "minimal" : "none";
  if (reasoning.effort) return reasoning.effort === "minimal" && model.startsWith("o") ? "low" : reasoning.effort;
  const budget = reasoning.budget_tokens;
  if (budget === undefined) return undefined;
  return budget <= 2_048 ? "low" : budget <= 16_384 ? "medium" : "high";
}

export function toOpenAIBody(cfg: OpenAIApiConfig, req: ChatRequest, model: string, stream: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = { model, messages: toOpenAIMessages(req.messages, cfg.dialect?.toolCallId) };
  if (req.max_tokens != null) body[cfg.maxTokensField] = req.max_tokens;
  if (req.temperature != null) body.temperature = req.temperature;
  if (req.top_p != null) body.top_p = req.top_p;
  if (req.stop?.length) body.stop = req.stop;
  if (req.seed != null) body.seed = req.seed;
  const effort = reasoningEffortFor(model, req.reasoning);
  if (effort !== undefined) body.reasoning_effort = effort;
  // The tuning hints this provider and model take (provider-hints.ts), under OpenAI's own names.
  const { parallel_tool_calls, ...hints } = hintsFor(req.hints, cfg.provider, model);
  Object.assign(body, hints);
  // OpenAI refuses parallel_tool_calls on a request without tools.
  if (parallel_tool_calls !== undefined && (req.tools?.length ?? 0) > 0) body.parallel_tool_calls = parallel_tool_calls;
  const format = req.response_format;
  if (format?.type === "json_object") body.response_format = { type: "json_object" };
  else if (format) body.response_format = { type: "json_schema", json_schema: { name: format.name, schema: format.schema, ...(format.strict != null ? { strict: format.strict } : {}) } };
  if (req.tools && req.tools.length > 0) {
    body.tools = req.tools.map((t) => ({
      type: "function",
      function: { name: t.name, description: t.description, parameters: t.parameters },
    }));
    if (req.tool_choice != null) {
      body.tool_choice =
        typeof req.tool_choice === "string" ? req.tool_choice : { type: "function", function: { name: req.tool_choice.name } };
    }
  }
  if (stream) {
    body.stream = true;
    if (cfg.dialect?.streamUsageOption !== false) body.stream_options = { include_usage: true };
  }
  return body;
}

const usageSchema = z
  .object({
    prompt_tokens: z.number().int(),
    completion_tokens: z.number().int(),
    prompt_tokens_details: z.object({ cached_tokens: z.number().int().nullable().optional() }).passthrough().nullable().optional(),
    completion_tokens_details: z.object({ reasoning_tokens: z.number().int().nullable().optional() }).passthrough().nullable().optional(),
  })
  .passthrough();

/** The prompt-cache reads and thinking tokens of OpenAI's usage (parts of its prompt and completion counts). */
export function usageExtras(usage: z.infer<typeof usageSchema> | null | undefined): ChatExtras | undefined {
  const cached = usage?.prompt_tokens_details?.cached_tokens ?? undefined;
  const reasoning = usage?.completion_tokens_details?.reasoning_tokens ?? undefined;
  if (!cached && !reasoning) return undefined;
  return { ...(cached ? { cached_input_tokens: cached } : {}), ...(reasoning ? { reasoning_tokens: reasoning } : {}) };
}

const responseSchema = z.object({
  model: z.string().optional(),
  choices: z
    .array(
      z.object({
        message: z.object({
          content: z.string().nullable().optional(),
          tool_calls: z
            .array(z.object({ id: z.string(), function: z.object({ name: z.string(), arguments: z.string() }) }))
            .nullable()
            .optional(),
        }),
        finish_reason: z.string().nullable().optional(),
      }),
    )
    .min(1),
  usage: usageSchema.nullable().optional(),
});

const chunkSchema = z.object({
  choices: z
    .array(
      z.object({
        delta: z
          .object({
            content: z.string().nullable().optional(),
            tool_calls: z
              .array(
                z.object({
                  // Mistral may leave it out: it sends each tool call whole, in one chunk.
                  index: z.number().int().optional(),
                  id: z.string().nullable().optional(),
                  function: z.object({ name: z.string().nullable().optional(), arguments: z.string().nullable().optional() }).optional(),
                }),
              )
              .nullable()
              .optional(),
          })
          .optional(),
        finish_reason: z.string().nullable().optional(),
      }),
    )
    .default([]),
  usage: usageSchema.nullable().optional(),
});

export const openaiChat: UpstreamChat<OpenAIApiConfig> = async (cfg, client, req, opts) => {
  const answer = await sendForJson(cfg.provider, client, openaiUrls.chat(cfg, opts.upstreamModel), {
    headers: openaiHeaders(cfg),
    body: toOpenAIBody(cfg, req, opts.upstreamModel, false),
    signal: opts.signal,
  });
  const data = parseUpstream(cfg.provider, responseSchema, answer);
  const choice = data.choices[0]!;
  const toolCalls: ToolCall[] = (choice.message.tool_calls ?? []).map((c) => ({
    id: c.id,
    name: c.function.name,
    arguments: parseToolArguments(cfg.provider, c.function.arguments),
  }));
  return {
    content: choice.message.content ?? "",
    finish_reason: (cfg.dialect?.finishReason ?? mapOpenAIFinishReason)(choice.finish_reason, toolCalls.length > 0),
    model: data.model ?? opts.upstreamModel,
    provider: cfg.provider,
    input_tokens: data.usage?.prompt_tokens ?? 0,
    output_tokens: data.usage?.completion_tokens ?? 0,
    tool_calls: toolCalls.length > 0 ? toolCalls : null,
    ...withExtras(usageExtras(data.usage)),
  };
};

export const openaiChatStream: UpstreamChatStream<OpenAIApiConfig> = async function* (cfg, client, req, opts) {
  const body = await send(cfg.provider, client, openaiUrls.chat(cfg, opts.upstreamModel), {
    headers: { ...openaiHeaders(cfg), accept: "text/event-stream" },
    body: toOpenAIBody(cfg, req, opts.upstreamModel, true),
    signal: opts.signal,
  });
  // Tool call fragments arrive keyed by index: id and name first, arguments in pieces.
  const pending = new Map<number, { id: string; name: string; args: string }>();
  let finishReason: string | null | undefined;
  let usage: z.infer<typeof usageSchema> | null | undefined;
  let done = false;
  for await (const ev of parseSse(cfg.provider, body, opts.signal)) {
    // Keep reading to the end of the body after [DONE]: destroying a body
    // mid-read costs an error object and the keep-alive connection.
    if (ev.data === "[DONE]") {
      done = true;
      continue;
    }
    if (done) continue;
    const chunk = parseUpstream(cfg.provider, chunkSchema, parseSseJson(cfg.provider, ev.data));
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      const content = choice.delta?.content;
      if (content) yield { delta: content };
      const known = pending.size;
      for (const [position, tc] of (choice.delta?.tool_calls ?? []).entries()) {
        const index = tc.index ?? known + position;
        const entry = pending.get(index) ?? { id: "", name: "", args: "" };
        if (tc.id) entry.id = tc.id;
        if (tc.function?.name) entry.name += tc.function.name;
        if (tc.function?.arguments) entry.args += tc.function.arguments;
        pending.set(index, entry);
      }
      if (choice.finish_reason) finishReason = choice.finish_reason;
    }
  }
  if (!done && finishReason === undefined) throw cutStream(cfg.provider);
  const indices = [...pending.keys()].sort((a, b) => a - b);
  for (const i of indices) {
    const tc = pending.get(i)!;
    yield { tool_call: { id: tc.id, name: tc.name, arguments: parseToolArguments(cfg.provider, tc.args) } };
  }
  yield {
    finish_reason: (cfg.dialect?.finishReason ?? mapOpenAIFinishReason)(finishReason, pending.size > 0),
    input_tokens: usage?.prompt_tokens ?? 0,
    output_tokens: usage?.completion_tokens ?? 0,
    model: opts.upstreamModel,
    provider: cfg.provider,
    ...withExtras(usageExtras(usage)),
  };
};

function withExtras(extras: ChatExtras | undefined): { extras?: ChatExtras } {
  return extras ? { extras } : {};
}
