// Gemini generateContent / streamGenerateContent: request mapping (roles
// user/model, functionCall/functionResponse parts, inline_data/file_data
// images), zod schemas of the answers, JSON and SSE transforms.
import { z } from "zod";
import { systemApart, type ChatMessage, type ChatRequest } from "../chat-request.ts";
import type { ChatResult, ToolCall, UpstreamChat, UpstreamChatStream } from "../types.ts";
import { send, sendForJson } from "../upstream-request.ts";
import { cutStream, parseSse, parseSseJson } from "../sse.ts";
import { parseToolArguments } from "../tool-arguments.ts";
import { parseUpstream } from "../parse-upstream.ts";
import { geminiHeaders, geminiUrls, type GeminiApiConfig } from "./api.ts";
import { mapGeminiFinishReason } from "./map-gemini-finish-reason.ts";

type Part =
  | { text: string }
  | { inline_data: { mime_type: string; data: string } }
  | { file_data: { mime_type: string; file_uri: string } }
  | { functionCall: { name: string; args: Record<string, unknown> } }
  | { functionResponse: { name: string; response: Record<string, unknown> } };
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

export function toGeminiBody(req: ChatRequest): Record<string, unknown> {
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
    .object({ promptTokenCount: z.number().int().optional(), candidatesTokenCount: z.number().int().optional() })
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

function textOf(parts: z.infer<typeof partSchema>[]): string {
  return parts
    .filter((p) => p.text !== undefined && !p.thought)
    .map((p) => p.text)
    .join("");
}

export const geminiChat: UpstreamChat<GeminiApiConfig> = async (cfg, client, req, opts) => {
  const answer = await sendForJson(cfg.provider, client, geminiUrls.generate(cfg, opts.upstreamModel), {
    headers: geminiHeaders(cfg),
    body: toGeminiBody(req),
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
    output_tokens: data.usageMetadata?.candidatesTokenCount ?? 0,
    tool_calls: toolCalls.length > 0 ? toolCalls : null,
  };
};

export const geminiChatStream: UpstreamChatStream<GeminiApiConfig> = async function* (cfg, client, req, opts) {
  const body = await send(cfg.provider, client, geminiUrls.stream(cfg, opts.upstreamModel), {
    headers: { ...geminiHeaders(cfg), accept: "text/event-stream" },
    body: toGeminiBody(req),
    signal: opts.signal,
  });
  let finishReason: string | undefined;
  let toolCallCount = 0;
  let inputTokens = 0;
  let outputTokens = 0;
  for await (const ev of parseSse(cfg.provider, body, opts.signal)) {
    const chunk = parseUpstream(cfg.provider, responseSchema, parseSseJson(cfg.provider, ev.data));
    if (chunk.usageMetadata) {
      inputTokens = chunk.usageMetadata.promptTokenCount ?? inputTokens;
      outputTokens = chunk.usageMetadata.candidatesTokenCount ?? outputTokens;
    }
    const candidate = chunk.candidates[0];
    const parts = candidate?.content?.parts ?? [];
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
    output_tokens: outputTokens,
    model: opts.upstreamModel,
    provider: cfg.provider,
  };
};
