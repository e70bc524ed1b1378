// OpenAI's chat.completions request (every field of the official API; what
// each becomes is docs/guides/compat-fields.md), validated with zod, and its translation
// onto Troupe's one chat request (providers/chat-request.ts): content-part
// arrays become text plus images, tool call arguments (JSON strings) become
// objects, `developer` is a system message, `max_completion_tokens` is
// `max_tokens`. Unknown fields are refused with a 400 naming them, as
// OpenAI does.
import { z } from "zod";
import { uriString } from "../../../core/uri-schema.ts";
import { invalidRequest, type FieldIssue } from "../../../core/errors.ts";
import type { Catalogue } from "../../../providers/catalogue.ts";
import type { ChatMessage, ChatRequest, JsonResponseFormat, ReasoningRequest, ToolChoice } from "../../../providers/chat-request.ts";
import { routingStrategySchema, type ToolCall } from "../../../providers/types.ts";
import { imageFromUrl } from "../../../providers/vision.ts";
import { ignoredParams } from "../ignored-params.ts";
import { answerChangingNeeds, hintsOf, ignorableChatFields, noModelHonours } from "./chat-fields.ts";
import { resolveModel } from "./model-name.ts";

// Every part and field of the openai SDK's ChatCompletionCreateParams and
// message params (its chat completions types); what Troupe does with each
// is chat-fields.ts's rule and docs/guides/compat-fields.md's table.
const cacheBreakpoint = { prompt_cache_breakpoint: z.object({ mode: z.string().optional(), ttl: z.string().optional() }).optional() };
const textPart = z.object({ type: z.literal("text"), text: z.string(), ...cacheBreakpoint }).strict();
const imagePart = z
  .object({
    type: z.literal("image_url"),
    image_url: z.object({ url: uriString(20_000_000), detail: z.enum(["auto", "low", "high"]).optional() }).strict(),
    ...cacheBreakpoint,
  })
  .strict();
const inputAudioPart = z
  .object({ type: z.literal("input_audio"), input_audio: z.object({ data: z.string(), format: z.enum(["wav", "mp3"]) }).strict(), ...cacheBreakpoint })
  .strict();
const filePart = z
  .object({
    type: z.literal("file"),
    file: z.object({ file_data: z.string().optional(), file_id: z.string().optional(), filename: z.string().optional() }).strict(),
    ...cacheBreakpoint,
  })
  .strict();
const refusalPart = z.object({ type: z.literal("refusal"), refusal: z.string() }).strict();
const textContent = z.union([z.string(), z.array(textPart)]);
const userContent = z.union([z.string(), z.array(z.discriminatedUnion("type", [textPart, imagePart, inputAudioPart, filePart])).min(1)]);
const assistantContent = z.union([z.string(), z.array(z.discriminatedUnion("type", [textPart, refusalPart]))]);
const name = z.string().optional();

const toolCallIn = z
  .object({
    id: z.string().min(1),
    type: z.literal("function"),
    function: z.object({ name: z.string().min(1), arguments: z.string() }).strict(),
  })
  .strict();
const customToolCallIn = z
  .object({ id: z.string().min(1), type: z.literal("custom"), custom: z.object({ name: z.string().min(1), input: z.string() }).strict() })
  .strict();

const messageSchema = z.discriminatedUnion("role", [
  z.object({ role: z.literal("system"), content: textContent, name }).strict(),
  z.object({ role: z.literal("developer"), content: textContent, name }).strict(),
  z.object({ role: z.literal("user"), content: userContent, name }).strict(),
  z
    .object({
      role: z.literal("assistant"),
      content: assistantContent.nullable().optional(),
      name,
      refusal: z.string().nullable().optional(),
      tool_calls: z.array(z.discriminatedUnion("type", [toolCallIn, customToolCallIn])).optional(),
      audio: z.object({ id: z.string() }).strict().nullable().optional(),
      function_call: z.object({ name: z.string().min(1), arguments: z.string() }).strict().nullable().optional(),
    })
    .strict(),
  // `name` is not in OpenAI's type for a tool message, but OpenAI accepts it and LangChain's ToolMessage and litellm send it.
  z.object({ role: z.literal("tool"), content: textContent, tool_call_id: z.string().min(1), name }).strict(),
  // The deprecated function-calling form: a function's result, matched to the last call of that name.
  z.object({ role: z.literal("function"), content: z.string().nullable(), name: z.string().min(1) }).strict(),
]);

// The same rule as Troupe's tool definitions (providers/types.ts): every provider accepts it.
const toolName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "1-64 letters, digits, _ or -");
const functionDefinition = z
  .object({
    name: toolName,
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().nullable().optional(),
  })
  .strict();
const functionTool = z.object({ type: z.literal("function"), function: functionDefinition }).strict();
const customTool = z
  .object({
    type: z.literal("custom"),
    custom: z.object({ name: toolName, description: z.string().optional(), format: z.record(z.string(), z.unknown()).optional() }).strict(),
  })
  .strict();
const toolSchema = z.discriminatedUnion("type", [functionTool, customTool]);

const namedFunction = z.object({ type: z.literal("function"), function: z.object({ name: z.string().min(1) }).strict() }).strict();
const toolChoiceSchema = z.union([
  z.enum(["auto", "none", "required"]),
  namedFunction,
  z.object({ type: z.literal("custom"), custom: z.object({ name: z.string().min(1) }).strict() }).strict(),
  z
    .object({
      type: z.literal("allowed_tools"),
      allowed_tools: z.object({ mode: z.enum(["auto", "required"]), tools: z.array(z.record(z.string(), z.unknown())) }).strict(),
    })
    .strict(),
]);

const responseFormatSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text") }).strict(),
  z.object({ type: z.literal("json_object") }).strict(),
  z
    .object({
      type: z.literal("json_schema"),
      json_schema: z
        .object({ name: z.string().min(1), description: z.string().optional(), schema: z.record(z.string(), z.unknown()).optional(), strict: z.boolean().nullable().optional() })
        .strict(),
    })
    .strict(),
]);

/** OpenAI's reasoning efforts; Troupe's ReasoningRequest has four of them and `off` (chat-request's reasoningOf maps the rest). */
const reasoningEffortSchema = z.enum(["none", "minimal", "low", "medium", "high", "xhigh", "max"]);

/** Body of POST /openai/v1/chat/completions. */
export const openAiChatRequestSchema = z
  .object({
    model: z.string().min(1),
    messages: z.array(messageSchema).min(1),
    stream: z.boolean().nullable().optional(),
    stream_options: z.object({ include_usage: z.boolean().optional(), include_obfuscation: z.boolean().optional() }).strict().nullable().optional(),
    tools: z.array(toolSchema).optional(),
    tool_choice: toolChoiceSchema.optional(),
    parallel_tool_calls: z.boolean().optional(),
    temperature: z.number().min(0).max(2).nullable().optional(),
    top_p: z.number().min(0).max(1).nullable().optional(),
    stop: z.union([z.string(), z.array(z.string()).max(4)]).nullable().optional(),
    seed: z.number().int().nullable().optional(),
    max_tokens: z.number().int().min(1).max(1_000_000).nullable().optional(),
    max_completion_tokens: z.number().int().min(1).max(1_000_000).nullable().optional(),
    user: z.string().optional(),
    response_format: responseFormatSchema.optional(),
    n: z.number().int().min(1).max(128).nullable().optional(),
    reasoning_effort: reasoningEffortSchema.nullable().optional(),
    verbosity: z.enum(["low", "medium", "high"]).nullable().optional(),
    store: z.boolean().nullable().optional(),
    metadata: z.record(z.string().max(64), z.string().max(512)).nullable().optional(),
    service_tier: z.enum(["auto", "default", "flex", "scale", "priority", "fast"]).nullable().optional(),
    safety_identifier: z.string().nullable().optional(),
    prompt_cache_key: z.string().nullable().optional(),
    prompt_cache_retention: z.enum(["in_memory", "24h"]).nullable().optional(),
    prompt_cache_options: z.object({ mode: z.enum(["implicit", "explicit"]).optional(), ttl: z.string().optional() }).strict().optional(),
    presence_penalty: z.number().min(-2).max(2).nullable().optional(),
    frequency_penalty: z.number().min(-2).max(2).nullable().optional(),
    logit_bias: z.record(z.string(), z.number().min(-100).max(100)).nullable().optional(),
    logprobs: z.boolean().nullable().optional(),
    top_logprobs: z.number().int().min(0).max(20).nullable().optional(),
    prediction: z.object({ type: z.literal("content"), content: textContent }).strict().nullable().optional(),
    modalities: z.array(z.enum(["text", "audio"])).nullable().optional(),
    audio: z.object({ format: z.string(), voice: z.union([z.string(), z.object({ id: z.string() }).strict()]) }).strict().nullable().optional(),
    web_search_options: z
      .object({ search_context_size: z.enum(["low", "medium", "high"]).optional(), user_location: z.record(z.string(), z.unknown()).nullable().optional() })
      .strict()
      .optional(),
    moderation: z.record(z.string(), z.unknown()).nullable().optional(),
    /** Deprecated for tools; still OpenAI's API. */
    functions: z.array(functionDefinition).optional(),
    function_call: z.union([z.enum(["none", "auto"]), z.object({ name: z.string().min(1) }).strict()]).optional(),
    /** Troupe's extension (OpenAI SDKs pass it as an extra body field): how to route a named model. */
    routing_strategy: routingStrategySchema.optional(),
  })
  .strict();
export type OpenAiChatRequest = z.infer<typeof openAiChatRequestSchema>;

export interface TranslatedChat {
  request: ChatRequest;
  /** Vision when a message carries images (only vision-capable models take them). */
  category: "text" | "vision";
  /** Fields accepted and not sent on to any provider (chat-fields.ts), for the troupe-ignored-params header; the hints the serving provider does not take follow them. */
  ignored: string[];
  /** The body called functions the deprecated way (`functions`): the answer says `function_call`. */
  legacyFunctions: boolean;
}

type AnyContent = z.infer<typeof assistantContent> | z.infer<typeof textContent>;

/** The text of a content: its text parts joined (a refusal part is the model's earlier refusal, not text to continue). */
function text(content: AnyContent | null | undefined): string {
  if (content == null) return "";
  return typeof content === "string" ? content : content.map((p) => (p.type === "text" ? p.text : "")).join("");
}

function parsedArguments(raw: string, at: string, issues: FieldIssue[]): Record<string, unknown> {
  let args: unknown;
  try {
    args = raw.trim() === "" ? {} : JSON.parse(raw);
  } catch {
    args = undefined;
  }
  if (typeof args !== "object" || args === null || Array.isArray(args)) {
    issues.push({ path: at, message: "must be a JSON object in a string" });
    return {};
  }
  return args as Record<string, unknown>;
}

type AssistantIn = Extract<OpenAiChatRequest["messages"][number], { role: "assistant" }>;

function toolCallsOf(m: AssistantIn, at: string, issues: FieldIssue[], legacyId: () => string): ToolCall[] {
  const calls = (m.tool_calls ?? []).map((c, j): ToolCall => {
    if (c.type === "custom") {
      issues.push({ path: `${at}.tool_calls.${j}`, message: "custom tool calls are not supported: no model served by Troupe takes custom (free-form) tools; use function tools" });
      return { id: c.id, name: c.custom.name, arguments: {} };
    }
    return { id: c.id, name: c.function.name, arguments: parsedArguments(c.function.arguments, `${at}.tool_calls.${j}.function.arguments`, issues) };
  });
  if (m.function_call) calls.push({ id: legacyId(), name: m.function_call.name, arguments: parsedArguments(m.function_call.arguments, `${at}.function_call.arguments`, issues) });
  return calls;
}

/** Parts no model served by Troupe can read: refused by name, since the answer would not be the one asked for. */
const unreadParts: Record<string, string> = {
  input_audio: "input_audio parts are not supported: no chat model served by Troupe hears audio here (transcribe it with POST /openai/v1/audio/transcriptions first)",
  file: "file parts are not supported: no chat model served by Troupe reads files here; send the text",
};

function toMessages(body: OpenAiChatRequest, issues: FieldIssue[]): { messages: ChatMessage[]; imageAt: string | undefined } {
  let imageAt: string | undefined;
  // The deprecated function-calling form has no call ids: each call gets one, and the next `function` message of its name answers it.
  let legacyCount = 0;
  const openLegacyCalls = new Map<string, string>();
  const messages = body.messages.map((m, i): ChatMessage => {
    const at = `messages.${i}`;
    switch (m.role) {
      case "system":
      case "developer":
        return { role: "system", content: text(m.content) };
      case "user": {
        if (typeof m.content === "string") return { role: "user", content: m.content };
        const images = m.content.flatMap((p, j) => {
          if (p.type === "input_audio" || p.type === "file") issues.push({ path: `${at}.content.${j}`, message: unreadParts[p.type]! });
          if (p.type !== "image_url") return [];
          imageAt ??= `${at}.content.${j}.image_url`;
          return [imageFromUrl(p.image_url.url)];
        });
        const content = m.content.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("\n");
        return images.length > 0 ? { role: "user", content, images } : { role: "user", content };
      }
      case "assistant": {
        if (m.audio) issues.push({ path: `${at}.audio`, message: "an earlier audio answer cannot be referred to: no chat model served by Troupe answers with audio" });
        const legacyId = (): string => {
          const id = `call_function_${++legacyCount}`;
          openLegacyCalls.set(m.function_call!.name, id);
          return id;
        };
        const calls = toolCallsOf(m, at, issues, legacyId);
        return { role: "assistant", content: text(m.content), tool_calls: calls.length > 0 ? calls : null };
      }
      case "tool":
        return { role: "tool", content: text(m.content), tool_call_id: m.tool_call_id };
      case "function": {
        const id = openLegacyCalls.get(m.name);
        if (id === undefined) issues.push({ path: `${at}.name`, message: `no earlier assistant function_call named ${m.name} to answer` });
        openLegacyCalls.delete(m.name);
        return { role: "tool", content: m.content ?? "", tool_call_id: id ?? "" };
      }
    }
  });
  return { messages, imageAt };
}

function jsonFormatOf(format: OpenAiChatRequest["response_format"]): JsonResponseFormat | undefined {
  if (!format || format.type === "text") return undefined;
  if (format.type === "json_object") return { type: "json_object" };
  const { name, schema, strict } = format.json_schema;
  return { type: "json_schema", name, schema: schema ?? { type: "object" }, strict: strict ?? undefined };
}

type FunctionDefinition = z.infer<typeof functionDefinition>;

/** The function tools asked for (`tools`, or the deprecated `functions`), and the tool choice among them. */
function toolsOf(body: OpenAiChatRequest, issues: FieldIssue[]): { tools: FunctionDefinition[] | undefined; choice: ToolChoice | undefined } {
  if (body.functions?.length) {
    const call = body.function_call;
    return { tools: body.functions, choice: call === undefined || typeof call === "string" ? call : { name: call.name } };
  }
  const tools = (body.tools ?? []).flatMap((t, j) => {
    if (t.type === "custom") {
      issues.push({ path: `tools.${j}`, message: "custom tools are not supported: no model served by Troupe takes custom (free-form) tools; use function tools" });
      return [];
    }
    return [t.function];
  });
  if (tools.length === 0) return { tools: undefined, choice: undefined };
  const choice = body.tool_choice;
  if (choice === undefined || typeof choice === "string") return { tools, choice };
  if (choice.type === "function") return { tools, choice: { name: choice.function.name } };
  if (choice.type === "custom") {
    issues.push({ path: "tool_choice", message: "custom tools are not supported: no model served by Troupe takes custom (free-form) tools" });
    return { tools, choice: undefined };
  }
  // allowed_tools: the model may call only those, as auto or required.
  const allowed = new Set(choice.allowed_tools.tools.flatMap((t) => {
    const fn = t["function"];
    return typeof fn === "object" && fn !== null && typeof (fn as { name?: unknown }).name === "string" ? [(fn as { name: string }).name] : [];
  }));
  return { tools: tools.filter((t) => allowed.has(t.name)), choice: choice.allowed_tools.mode };
}

/** OpenAI's reasoning_effort as Troupe's reasoning request: `none` is off; `xhigh` and `max` are the most Troupe asks for, `high`. */
export function reasoningOf(effort: OpenAiChatRequest["reasoning_effort"]): ReasoningRequest | undefined {
  if (effort == null) return undefined;
  if (effort === "none") return { off: true };
  return { effort: effort === "xhigh" || effort === "max" ? "high" : effort };
}

/** A 400 for an answer-changing field (chat-fields.ts) the named model, or every model, does not honour. */
function answerChangingIssues(catalogue: Catalogue, body: OpenAiChatRequest): FieldIssue[] {
  const named = catalogue.get(body.model);
  return answerChangingNeeds(body).flatMap((field) => {
    if (named && field.problem(named) === undefined) return [];
    const honouring = catalogue.ofCategory("text").filter((m) => field.problem(m) === undefined);
    // A routing name picks among the honouring models (none today, so this is always the 400).
    if (!named && honouring.length > 0) return [];
    const message = named && honouring.length > 0 ? `model ${named.id} does not answer with ${field.asked}; ${noModelHonours(field, honouring)}` : noModelHonours(field, honouring);
    return [{ path: field.path, message }];
  });
}

/** Translates a validated body; 400 naming the field for what Troupe cannot serve. */
export function toChatRequest(catalogue: Catalogue, body: OpenAiChatRequest): TranslatedChat {
  const issues: FieldIssue[] = [];
  const { messages, imageAt } = toMessages(body, issues);
  const { tools, choice } = toolsOf(body, issues);
  issues.push(...answerChangingIssues(catalogue, body));
  if (issues.length > 0) throw invalidRequest(issues);
  const category = imageAt ? "vision" : "text";
  const streaming = body.stream === true;
  const format = jsonFormatOf(body.response_format);
  let routed;
  try {
    routed = resolveModel(catalogue, body.model, { category, tools: tools !== undefined, streaming, json: format !== undefined }, body.routing_strategy);
  } catch (error) {
    // The field at fault is the one the model cannot take: an image part, or the JSON format.
    const entry = catalogue.get(body.model);
    if (imageAt && entry && !entry.also.includes("vision") && entry.category === "text") {
      throw invalidRequest([{ path: imageAt, message: `model ${entry.id} does not take images (GET /openai/v1/models; vision-capable models serve the vision category)` }]);
    }
    if (format && entry?.category === "text" && !entry.capabilities.json_output) {
      throw invalidRequest([{ path: "response_format", message: `${format.type} is not supported by model ${entry.id}; use text, or a model that can answer in JSON (OpenAI, Gemini)` }]);
    }
    throw error;
  }
  const request: ChatRequest = {
    messages,
    model: routed.model,
    routing_strategy: routed.routing_strategy,
    max_tokens: body.max_completion_tokens ?? body.max_tokens ?? null,
    temperature: body.temperature ?? null,
    tools: tools?.map((t) => ({
      name: t.name,
      description: t.description ?? "",
      parameters: t.parameters ?? { type: "object", properties: {} },
    })),
    tool_choice: tools ? choice : undefined,
    top_p: body.top_p,
    stop: typeof body.stop === "string" ? [body.stop] : (body.stop ?? undefined),
    seed: body.seed,
    response_format: format,
    reasoning: reasoningOf(body.reasoning_effort),
    hints: hintsOf(body),
  };
  return { request, category, ignored: ignoredParams(body, ignorableChatFields), legacyFunctions: (body.functions?.length ?? 0) > 0 };
}
