// Gemini generateContent request → Troupe's one chat request
// (providers/chat-request.ts), which the router sends to any provider:
// systemInstruction becomes a system message, `model` turns assistant
// messages (functionCall parts their tool_calls, thought parts their
// reasoning), functionResponse parts tool messages answering the call of
// that id or, as Gemini's clients often send none, the earliest unanswered
// call of that name; inline and file images a user message's images;
// generationConfig the sampling fields, response_format and reasoning. Field
// rules not translated here are fields.ts's table.
import { invalidRequest, TroupeError } from "../../../core/errors.ts";
import type { Catalogue, ModelEntry } from "../../../providers/catalogue.ts";
import { capabilityProblem } from "../../../providers/catalogue.ts";
import type { ChatMessage, ChatRequest, JsonResponseFormat, ReasoningRequest, ToolChoice } from "../../../providers/chat-request.ts";
import type { ImageInput, ReasoningBlock, ToolCall, ToolDefinition } from "../../../providers/types.ts";
import { hintsOf, refusedFields } from "./fields.ts";
import { toJsonSchema } from "./json-schema.ts";
import type { Content, GenerateContentBody, GenerationConfig, Part } from "./schemas.ts";

export interface TranslatedGenerate {
  request: ChatRequest;
  /** Vision when a message carries images (only vision-capable models take them). */
  category: "text" | "vision";
  /** Whether the answer shows thought parts (Gemini shows them only when includeThoughts asks). */
  includeThoughts: boolean;
}

/** The catalogue model a path names (`gemini-2.5-flash`, or `models/…` as some clients repeat it), else Gemini's 404. */
export function requireModel(catalogue: Catalogue, name: string): ModelEntry {
  const id = name.startsWith("models/") ? name.slice("models/".length) : name;
  const entry = catalogue.get(id);
  if (!entry) throw new TroupeError("not_found", `models/${id} is not found (GET /gemini/v1/models lists the catalogue)`);
  return entry;
}

function requireCapable(entry: ModelEntry, need: Parameters<typeof capabilityProblem>[1]): void {
  const problem = capabilityProblem(entry, need);
  if (problem) throw invalidRequest([{ path: "model", message: problem }]);
}

type Open = { id: string; name: string }[];

/** A part's content, or a 400 naming it when no model served here can read it. */
function imageOf(part: Part, path: string): ImageInput | undefined {
  if (part.inlineData) {
    if (!part.inlineData.mimeType.startsWith("image/")) throw invalidRequest([{ path: `${path}.inlineData.mimeType`, message: `${part.inlineData.mimeType}: only image data is read on this mount` }]);
    return { base64: part.inlineData.data, media_type: part.inlineData.mimeType };
  }
  if (part.fileData) {
    const mime = part.fileData.mimeType;
    if (mime !== undefined && !mime.startsWith("image/")) throw invalidRequest([{ path: `${path}.fileData.mimeType`, message: `${mime}: only image files are read on this mount` }]);
    return { url: part.fileData.fileUri };
  }
  return undefined;
}

function refuseUnreadable(part: Part, path: string): void {
  for (const kind of ["executableCode", "codeExecutionResult", "videoMetadata"] as const) {
    if (part[kind] !== undefined) throw invalidRequest([{ path: `${path}.${kind}`, message: `${kind} parts are not read by the models served here` }]);
  }
}

function toMessages(content: Content, index: number, open: Open, provider: string): ChatMessage[] {
  const path = `body.contents.${index}`;
  const role = content.role ?? "user";
  if (role === "system") throw invalidRequest([{ path: `${path}.role`, message: "a system turn goes in systemInstruction" }]);
  let text = "";
  const images: ImageInput[] = [];
  const toolCalls: ToolCall[] = [];
  const reasoning: ReasoningBlock[] = [];
  const results: ChatMessage[] = [];
  content.parts.forEach((part, j) => {
    const at = `${path}.parts.${j}`;
    refuseUnreadable(part, at);
    if (part.thought === true) {
      if (role === "model") reasoning.push(part.thoughtSignature ? { provider, text: part.text ?? "", signature: part.thoughtSignature } : { provider, text: part.text ?? "" });
      return;
    }
    if (part.text !== undefined) text += part.text;
    const image = imageOf(part, at);
    if (image) {
      if (role === "model") throw invalidRequest([{ path: at, message: "a model turn cannot carry images" }]);
      images.push(image);
    }
    if (part.functionCall) {
      if (role !== "model") throw invalidRequest([{ path: `${at}.functionCall`, message: "only a model turn calls functions" }]);
      // Gemini's calls may have no id; the position names it, the same on every resend of the conversation.
      const id = part.functionCall.id ?? `call_${index}_${j}`;
      toolCalls.push({ id, name: part.functionCall.name, arguments: part.functionCall.args ?? {} });
      open.push({ id, name: part.functionCall.name });
    }
    if (part.functionResponse) {
      if (role === "model") throw invalidRequest([{ path: `${at}.functionResponse`, message: "a function's response goes in a user turn" }]);
      const { id, name, response } = part.functionResponse;
      const at2 = open.findIndex((c) => (id !== undefined ? c.id === id : c.name === name));
      if (at2 < 0) throw invalidRequest([{ path: `${at}.functionResponse`, message: `no earlier functionCall ${id !== undefined ? `with id ${id}` : `of ${name}`} is unanswered` }]);
      const [call] = open.splice(at2, 1);
      results.push({ role: "tool", tool_call_id: call!.id, content: JSON.stringify(response ?? {}) });
    }
  });
  if (role === "model") {
    const message: ChatMessage = { role: "assistant", content: text };
    if (toolCalls.length > 0) message.tool_calls = toolCalls;
    if (reasoning.length > 0) message.reasoning = reasoning;
    return [message];
  }
  // Tool results first: they answer the previous model turn, the text follows them.
  if (text !== "" || images.length > 0) {
    const message: ChatMessage = { role: "user", content: text };
    if (images.length > 0) message.images = images;
    results.push(message);
  }
  return results;
}

/** The conversation part (shared with countTokens). */
export function toConversation(body: Pick<GenerateContentBody, "contents" | "systemInstruction" | "tools" | "toolConfig">, provider: string): Pick<ChatRequest, "messages" | "tools" | "tool_choice"> {
  const messages: ChatMessage[] = [];
  const system = body.systemInstruction?.parts.map((p) => p.text ?? "").join("\n");
  if (system) messages.push({ role: "system", content: system });
  const open: Open = [];
  body.contents.forEach((c, i) => messages.push(...toMessages(c, i, open, provider)));
  const calling = body.toolConfig?.functionCallingConfig;
  const allowed = calling?.allowedFunctionNames;
  let tools: ToolDefinition[] | undefined = body.tools?.flatMap((t) =>
    (t.functionDeclarations ?? []).map((f) => ({ name: f.name, description: f.description ?? "", parameters: (f.parametersJsonSchema ?? (f.parameters ? toJsonSchema(f.parameters) : { type: "object", properties: {} })) as Record<string, unknown> })),
  );
  // allowedFunctionNames narrows which functions may be called: the others are not offered.
  if (allowed && tools) tools = tools.filter((t) => allowed.includes(t.name));
  if (tools?.length === 0) tools = undefined;
  let toolChoice: ToolChoice | undefined;
  switch (calling?.mode) {
    case "ANY":
    case "VALIDATED":
      toolChoice = tools?.length === 1 && calling.mode === "ANY" ? { name: tools[0]!.name } : "required";
      break;
    case "NONE":
      toolChoice = "none";
      break;
    case "AUTO":
      toolChoice = "auto";
      break;
  }
  const conversation: Pick<ChatRequest, "messages" | "tools" | "tool_choice"> = { messages };
  if (tools) conversation.tools = tools;
  if (toolChoice && tools) conversation.tool_choice = toolChoice;
  return conversation;
}

function responseFormatOf(config: GenerationConfig | undefined): JsonResponseFormat | undefined {
  if (config?.responseMimeType !== "application/json") {
    if (config?.responseSchema !== undefined || config?.responseJsonSchema !== undefined) {
      throw invalidRequest([{ path: "body.generationConfig.responseMimeType", message: "a response schema needs responseMimeType application/json" }]);
    }
    return undefined;
  }
  if (config.responseJsonSchema !== undefined) {
    if (typeof config.responseJsonSchema !== "object" || config.responseJsonSchema === null) throw invalidRequest([{ path: "body.generationConfig.responseJsonSchema", message: "a JSON Schema object" }]);
    return { type: "json_schema", name: "response", schema: config.responseJsonSchema as Record<string, unknown>, strict: true };
  }
  if (config.responseSchema !== undefined) return { type: "json_schema", name: "response", schema: toJsonSchema(config.responseSchema), strict: true };
  return { type: "json_object" };
}

const effortOfLevel = { MINIMAL: "minimal", LOW: "low", MEDIUM: "medium", HIGH: "high" } as const;

/** thinkingConfig → the request's reasoning: a budget (0 turns thinking off, -1 leaves it to the model), or a level. */
function reasoningOf(config: GenerationConfig | undefined): ReasoningRequest | undefined {
  const thinking = config?.thinkingConfig;
  if (!thinking) return undefined;
  const reasoning: ReasoningRequest = {};
  if (thinking.thinkingBudget === 0) reasoning.off = true;
  else if (thinking.thinkingBudget !== undefined && thinking.thinkingBudget > 0) reasoning.budget_tokens = thinking.thinkingBudget;
  if (thinking.thinkingLevel !== undefined && thinking.thinkingLevel !== "THINKING_LEVEL_UNSPECIFIED") reasoning.effort = effortOfLevel[thinking.thinkingLevel];
  return Object.keys(reasoning).length > 0 ? reasoning : undefined;
}

export function refuseUnhonourable(body: GenerateContentBody): void {
  for (const field of refusedFields) {
    const why = field.refusal(body);
    if (why) throw invalidRequest([{ path: `body.${field.path}`, message: why }]);
  }
}

export function toChatRequest(catalogue: Catalogue, modelName: string, body: GenerateContentBody, streaming: boolean): TranslatedGenerate {
  const entry = requireModel(catalogue, modelName);
  refuseUnhonourable(body);
  const config = body.generationConfig;
  const request: ChatRequest = {
    ...toConversation(body, entry.provider),
    model: entry.id,
    // The named model first, then its equivalents at other providers when it fails (as /v1's default).
    routing_strategy: "auto",
  };
  if (config?.maxOutputTokens !== undefined) request.max_tokens = config.maxOutputTokens;
  if (config?.temperature !== undefined) request.temperature = config.temperature;
  if (config?.topP !== undefined) request.top_p = config.topP;
  if (config?.stopSequences !== undefined) request.stop = config.stopSequences;
  if (config?.seed !== undefined) request.seed = config.seed;
  const format = responseFormatOf(config);
  if (format) request.response_format = format;
  const reasoning = reasoningOf(config);
  if (reasoning) request.reasoning = reasoning;
  const hints = hintsOf(body);
  if (hints) request.hints = hints;
  const category = request.messages.some((m) => (m.images?.length ?? 0) > 0) ? "vision" : "text";
  requireCapable(entry, { category: category === "vision" && entry.category === "text" ? "text" : category, tools: request.tools !== undefined, streaming, json: format !== undefined });
  if (category === "vision" && !entry.also.includes("vision")) throw invalidRequest([{ path: "model", message: `model ${entry.id} does not take images` }]);
  return { request, category, includeThoughts: config?.thinkingConfig?.includeThoughts === true };
}
