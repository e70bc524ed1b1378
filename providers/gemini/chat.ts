// Gemini generateContent / streamGenerateContent: request mapping (roles
// user/model, functionCall/functionResponse parts, inline_data/file_data
// images), zod schemas of the answers, JSON and SSE transforms. A reasoning
// request becomes generationConfig.thinkingConfig (thinkingBudget for
// Gemini 2.5, thinkingLevel for Gemini 3); the thoughtSignatures of an
// answer are kept as ReasoningBlocks (extras.reasoning) and sent back on the
// parts of that turn, as Gemini asks for function calling with thinking.
import { z } from "zod";
import { systemApart, type ChatMessage, type ChatRequest, type ReasoningRequest } from "../chat-request.ts";
import type { ChatExtras, ChatResult, ReasoningBlock, StreamEvent, ToolCall, UpstreamChat, UpstreamChatStream } from "../types.ts";
import { send, sendForJson } from "../upstream-request.ts";
import { cutStream, parseSse, parseSseJson } from "../sse.ts";
import { parseToolArguments } from "../tool-arguments.ts";
import { parseUpstream } from "../parse-upstream.ts";
import { geminiHeaders, geminiUrls, type GeminiApiConfig } from "./api.ts";
import { mapGeminiFinishReason } from "./map-gemini-finish-reason.ts";

type Part = (
  | { text: string }
  | { inline_data: { mime_type: string; data: string } }
  | { file_data: { mime_type: string; file_uri: string } }
  | { functionCall: { name: string; args: Record<string, unknown> } }
  | { functionResponse: { name: string; response: Record<string, unknown> } }
) & { thoughtSignature?: string };
type Content = { role: "user" | "model"; parts: Part[] };

function mimeFromUrl(url: string): string {
  const ext = /\.([a-z0-9]+)(?:[?#]|$)/i.exec(url)?.[1]?.toLowerCase();
  if (ext === "png") return "image/png";
  if (ext === "webp") return "image/webp";
  if (ext === "gif") return "image/gif";
  return "image/jpeg";
}

export function toGeminiContents(messages: ChatMessage[]): { system: string | undefined; contents: Content[] } {
  const { system, conversation } = systemApart(messages);
  const contents: Content[] = [];
  // functionResponse is matched by name, so remember which call id had which name.
  const callNames = new Map<string, string>();
  const push = (role: Content["role"], parts: Part[]): void => {
    const last = contents[contents.length - 1];
    if (last && last.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  };
  for (const m of conversation) {
    switch (m.role) {
      case "user": {
        const parts: Part[] = [];
        if (m.content !== "" || !m.images?.length) parts.push({ text: m.content });
        for (const img of m.images ?? []) {
          parts.push(
            "url" in img
              ? { file_data: { mime_type: mimeFromUrl(img.url), file_uri: img.url } }
              : { inline_data: { mime_type: img.media_type, data: img.base64 } },
          );
        }
        push("user", parts);
        break;
      }
      case "assistant": {
        const parts: Part[] = [];
        if (m.content !== "") parts.push({ text: m.content });
        for (const c of m.tool_calls ?? []) {
          callNames.set(c.id, c.name);
          parts.push({ functionCall: { name: c.name, args: c.arguments } });
        }
        if (parts.length === 0) parts.push({ text: "" });
        attachSignatures(parts, m.reasoning);
        push("model", parts);
        break;
      }
      case "tool": {
        const name = callNames.get(m.tool_call_id ?? "") ?? "tool";
        push("user", [{ functionResponse: { name, response: toolResponse(m.content) } }]);
        break;
      }
    }
  }
  return { system, contents };
}

/**
 * Gemini's thoughtSignatures back on the turn that made them: in order on its
 * function calls when it called any (Gemini checks those), else on its last
 * part. Only Gemini's own blocks go back.
 */
function attachSignatures(parts: Part[], reasoning: ReasoningBlock[] | undefined): void {
  const signatures = (reasoning ?? []).filter((b) => b.provider === "gemini" && b.signature).map((b) => b.signature!);
  if (signatures.length === 0) return;
  const calls = parts.filter((p) => "functionCall" in p);
  const targets = calls.length > 0 ? calls : [parts[parts.length - 1]!];
  targets.forEach((part, i) => {
    const signature = signatures[i];
    if (signature !== undefined) part.thoughtSignature = signature;
  });
}

/** Gemini wants an object: a JSON object result is passed as is, anything else wrapped. */
function toolResponse(content: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(content);
    if (v && typeof v === "object" && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // plain text result
  }
  return { content };
}

/** Gemini 2.5's thinking budgets per effort (tokens; 0 turns thinking off where the model allows it). */
const thinkingBudgets = { minimal: 512, low: 1_024, medium: 8_192, high: 24_576 } as const;

/**
 * A reasoning request as Gemini's thinkingConfig: Gemini 3 takes a
 * thinkingLevel (low or high), Gemini 2.5 a thinkingBudget in tokens.
 * `off` is budget 0 on 2.5 (Pro refuses 0 and thinks least at 128) and
 * the low level on 3, which cannot turn thinking off.
 */
export function thinkingConfigFor(model: string, reasoning: ReasoningRequest | undefined): Record<string, unknown> | undefined {
  if (!reasoning) return undefined;
  if (/^gemini-3/.test(model)) {
    const high = !reasoning.off && (reasoning.effort === "medium" || reasoning.effort === "high" || (reasoning.budget_tokens ?? 0) > 8_192);
    return { thinkingLevel: high ? "high" : "low" };
  }
  if (reasoning.off) return { thinkingBudget: /pro/.test(model) ? 128 : 0 };
  if (reasoning.budget_tokens !== undefined) return { thinkingBudget: reasoning.budget_tokens };
  return reasoning.effort ? { thinkingBudget: thinkingBudgets[reasoning.effort] } : undefined;
}

export function toGeminiBody(req: ChatRequest, model = ""): Record<string, unknown> {
  const { system, contents } = toGeminiContents(req.messages);
  const body: Record<string, unknown> = { contents };
  if (system !== undefined) body.systemInstruction = { parts: [{ text: system }] };
  const generationConfig: Record<string, unknown> = {};
  if (req.max_tokens != null) generationConfig.maxOutputTokens = req.max_tokens;
  if (req.temperature != null) generationConfig.temperature = req.temperature;
  if (req.top_p != null) generationConfig.topP = req.top_p;
  if (req.stop?.length) generationConfig.stopSequences = req.stop;
  if (req.seed != null) generationConfig.seed = req.seed;
  if (req.response_format) generationConfig.responseMimeType = "application/json";
  if (req.response_format?.type === "json_schema") generationConfig.responseJsonSchema = req.response_format.schema;
  const thinkingConfig = thinkingConfigFor(model, req.reasoning);
  if (thinkingConfig) generationConfig.thinkingConfig = thinkingConfig;
  if (Object.keys(generationConfig).length > 0) body.generationConfig = generationConfig;
  if (req.tools && req.tools.length > 0) {
    body.tools = [
      { functionDeclarations: req.tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters })) },
    ];
    const choice = req.tool_choice;
    if (choice === "none") body.toolConfig = { functionCallingConfig: { mode: "NONE" } };
    else if (choice === "required") body.toolConfig = { functionCallingConfig: { mode: "ANY" } };
    else if (choice != null && choice !== "auto") {
      body.toolConfig = { functionCallingConfig: { mode: "ANY", allowedFunctionNames: [choice.name] } };
    }
  }
  return body;
}

const partSchema = z
  .object({
    text: z.string().optional(),
    thought: z.boolean().optional(),
    thoughtSignature: z.string().optional(),
    functionCall: z.object({ name: z.string(), args: z.unknown().optional(), id: z.string().optional() }).optional(),
  })
  .passthrough();

const responseSchema = z.object({
  candidates: z
    .array(
      z.object({
        content: z.object({ parts: z.array(partSchema).default([]) }).optional(),
        finishReason: z.string().optional(),
      }),
    )
    .default([]),
  usageMetadata: z
    .object({
      promptTokenCount: z.number().int().optional(),
      candidatesTokenCount: z.number().int().optional(),
      thoughtsTokenCount: z.number().int().optional(),
      cachedContentTokenCount: z.number().int().optional(),
    })
    .passthrough()
    .optional(),
  modelVersion: z.string().optional(),
});

function toolCallsOf(cfg: GeminiApiConfig, parts: z.infer<typeof partSchema>[]): ToolCall[] {
  return parts
    .filter((p) => p.functionCall)
    .map((p) => ({
      id: p.functionCall!.id ?? cfg.newToolCallId(),
      name: p.functionCall!.name,
      arguments: parseToolArguments(cfg.provider, p.functionCall!.args ?? {}),
    }));
}

type Usage = NonNullable<z.infer<typeof responseSchema>["usageMetadata"]>;

/** Gemini counts thinking apart from the answer; Troupe's output tokens are both (both are billed as output). */
function outputTokensOf(usage: Usage | undefined): number {
  return (usage?.candidatesTokenCount ?? 0) + (usage?.thoughtsTokenCount ?? 0);
}

/** The thinking of a turn: each signed part's signature (with its thought summary text when Gemini sent one). */
function reasoningOf(parts: z.infer<typeof partSchema>[]): ReasoningBlock[] {
  return parts.flatMap((p) => (p.thoughtSignature ? [{ provider: "gemini", text: p.thought ? (p.text ?? "") : "", signature: p.thoughtSignature }] : []));
}

function extrasOf(usage: Usage | undefined, reasoning: ReasoningBlock[]): { extras?: ChatExtras } {
  const extras: ChatExtras = {};
  if (reasoning.length > 0) extras.reasoning = reasoning;
  if (usage?.cachedContentTokenCount) extras.cached_input_tokens = usage.cachedContentTokenCount;
  if (usage?.thoughtsTokenCount) extras.reasoning_tokens = usage.thoughtsTokenCount;
  return Object.keys(extras).length > 0 ? { extras } : {};
}

function textOf(parts: z.infer<typeof partSchema>[]): string {
  return parts
    .filter((p) => p.text !== undefined && !p.thought)
    .map((p) => p.text)
    .join("");
}

export const geminiChat: UpstreamChat<GeminiApiConfig> = async (cfg, client, req, opts) => {
  const answer = await sendForJson(cfg.provider, client, geminiUrls.generate(cfg, opts.upstreamModel), {
    headers: geminiHeaders(cfg),
    body: toGeminiBody(req, opts.upstreamModel),
    signal: opts.signal,
  });
  const data = parseUpstream(cfg.provider, responseSchema, answer);
  const candidate = data.candidates[0];
  const parts = candidate?.content?.parts ?? [];
  const toolCalls = toolCallsOf(cfg, parts);
  return {
    content: textOf(parts),
    // No candidate at all means the prompt itself was blocked.
    finish_reason: candidate ? mapGeminiFinishReason(candidate.finishReason, toolCalls.length > 0) : "content_filter",
    model: opts.upstreamModel,
    provider: cfg.provider,
    input_tokens: data.usageMetadata?.promptTokenCount ?? 0,
    output_tokens: outputTokensOf(data.usageMetadata),
    tool_calls: toolCalls.length > 0 ? toolCalls : null,
    ...extrasOf(data.usageMetadata, reasoningOf(parts)),
  };
};

export const geminiChatStream: UpstreamChatStream<GeminiApiConfig> = async function* (cfg, client, req, opts) {
  const body = await send(cfg.provider, client, geminiUrls.stream(cfg, opts.upstreamModel), {
    headers: { ...geminiHeaders(cfg), accept: "text/event-stream" },
    body: toGeminiBody(req, opts.upstreamModel),
    signal: opts.signal,
  });
  let finishReason: string | undefined;
  let toolCallCount = 0;
  let inputTokens = 0;
  let usage: Usage | undefined;
  for await (const ev of parseSse(cfg.provider, body, opts.signal)) {
    const chunk = parseUpstream(cfg.provider, responseSchema, parseSseJson(cfg.provider, ev.data));
    if (chunk.usageMetadata) {
      inputTokens = chunk.usageMetadata.promptTokenCount ?? inputTokens;
      usage = chunk.usageMetadata;
    }
    const candidate = chunk.candidates[0];
    const parts = candidate?.content?.parts ?? [];
    for (const block of reasoningOf(parts)) {
      const event: StreamEvent = { reasoning_block: block };
      yield event;
    }
    const text = textOf(parts);
    if (text) yield { delta: text };
    for (const call of toolCallsOf(cfg, parts)) {
      toolCallCount++;
      yield { tool_call: call };
    }
    if (candidate?.finishReason) finishReason = candidate.finishReason;
  }
  // Gemini's stream has no terminator: only the finishReason says it finished.
  if (finishReason === undefined) throw cutStream(cfg.provider);
  yield {
    finish_reason: mapGeminiFinishReason(finishReason, toolCallCount > 0),
    input_tokens: inputTokens,
    output_tokens: outputTokensOf(usage),
    model: opts.upstreamModel,
    provider: cfg.provider,
    // The blocks went out as reasoning_block events; the finish carries only the counts.
    ...extrasOf(usage, []),
  };
};
