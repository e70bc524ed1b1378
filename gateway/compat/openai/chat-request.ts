// OpenAI's chat.completions request (the subset documented in
// docs/guides/openai-compatible.md), validated with zod, and its translation
// onto Troupe's one chat request (providers/chat-request.ts): content-part
// arrays become text plus images, tool call arguments (JSON strings) become
// objects, `developer` is a system message, `max_completion_tokens` is
// `max_tokens`. Unknown fields are refused with a 400 naming them, as
// OpenAI does.
import { z } from "zod";
import { uriString } from "../../../core/uri-schema.ts";
import { invalidRequest, type FieldIssue } from "../../../core/errors.ts";
import type { Catalogue } from "../../../providers/catalogue.ts";
import type { ChatMessage, ChatRequest, JsonResponseFormat, ToolChoice } from "../../../providers/chat-request.ts";
import { routingStrategySchema, type ToolCall } from "../../../providers/types.ts";
import { imageFromUrl } from "../../../providers/vision.ts";
import { resolveModel } from "./model-name.ts";

const textPart = z.object({ type: z.literal("text"), text: z.string() }).strict();
const imagePart = z
  .object({
    type: z.literal("image_url"),
    image_url: z.object({ url: uriString(20_000_000), detail: z.enum(["auto", "low", "high"]).optional() }).strict(),
  })
  .strict();
const textContent = z.union([z.string(), z.array(textPart)]);
const userContent = z.union([z.string(), z.array(z.discriminatedUnion("type", [textPart, imagePart])).min(1)]);
const name = z.string().optional();

const toolCallIn = z
  .object({
    id: z.string().min(1),
    type: z.literal("function"),
    function: z.object({ name: z.string().min(1), arguments: z.string() }).strict(),
  })
  .strict();

const messageSchema = z.discriminatedUnion("role", [
  z.object({ role: z.literal("system"), content: textContent, name }).strict(),
  z.object({ role: z.literal("developer"), content: textContent, name }).strict(),
  z.object({ role: z.literal("user"), content: userContent, name }).strict(),
  z
    .object({
      role: z.literal("assistant"),
      content: textContent.nullable().optional(),
      name,
      refusal: z.string().nullable().optional(),
      tool_calls: z.array(toolCallIn).optional(),
    })
    .strict(),
  z.object({ role: z.literal("tool"), content: textContent, tool_call_id: z.string().min(1) }).strict(),
]);

const toolSchema = z
  .object({
    type: z.literal("function"),
    function: z
      .object({
        // The same rule as Troupe's tool definitions (providers/types.ts): every provider accepts it.
        name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "1-64 letters, digits, _ or -"),
        description: z.string().optional(),
        parameters: z.record(z.string(), z.unknown()).optional(),
        strict: z.boolean().nullable().optional(),
      })
      .strict(),
  })
  .strict();

const toolChoiceSchema = z.union([
  z.enum(["auto", "none", "required"]),
  z.object({ type: z.literal("function"), function: z.object({ name: z.string().min(1) }).strict() }).strict(),
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

/** Body of POST /openai/v1/chat/completions. */
export const openAiChatRequestSchema = z
  .object({
    model: z.string().min(1),
    messages: z.array(messageSchema).min(1),
    stream: z.boolean().nullable().optional(),
    stream_options: z.object({ include_usage: z.boolean().optional() }).strict().nullable().optional(),
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
    n: z.literal(1, { error: "only n = 1 is supported" }).nullable().optional(),
    /** Troupe's extension (OpenAI SDKs pass it as an extra body field): how to route a named model. */
    routing_strategy: routingStrategySchema.optional(),
  })
  .strict();
export type OpenAiChatRequest = z.infer<typeof openAiChatRequestSchema>;

export interface TranslatedChat {
  request: ChatRequest;
  /** Vision when a message carries images (only vision-capable models take them). */
  category: "text" | "vision";
}

function text(content: z.infer<typeof textContent> | null | undefined): string {
  if (content == null) return "";
  return typeof content === "string" ? content : content.map((p) => p.text).join("");
}

function toolCallsOf(calls: z.infer<typeof toolCallIn>[], at: string, issues: FieldIssue[]): ToolCall[] {
  return calls.map((c, j) => {
    let args: unknown;
    try {
      args = c.function.arguments.trim() === "" ? {} : JSON.parse(c.function.arguments);
    } catch {
      args = undefined;
    }
    if (typeof args !== "object" || args === null || Array.isArray(args)) {
      issues.push({ path: `${at}.tool_calls.${j}.function.arguments`, message: "must be a JSON object in a string" });
      return { id: c.id, name: c.function.name, arguments: {} };
    }
    return { id: c.id, name: c.function.name, arguments: args as Record<string, unknown> };
  });
}

function toMessages(body: OpenAiChatRequest, issues: FieldIssue[]): { messages: ChatMessage[]; imageAt: string | undefined } {
  let imageAt: string | undefined;
  const messages = body.messages.map((m, i): ChatMessage => {
    const at = `messages.${i}`;
    switch (m.role) {
      case "system":
      case "developer":
        return { role: "system", content: text(m.content) };
      case "user": {
        if (typeof m.content === "string") return { role: "user", content: m.content };
        const images = m.content.flatMap((p, j) => {
          if (p.type !== "image_url") return [];
          imageAt ??= `${at}.content.${j}.image_url`;
          return [imageFromUrl(p.image_url.url)];
        });
        const content = m.content.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("\n");
        return images.length > 0 ? { role: "user", content, images } : { role: "user", content };
      }
      case "assistant":
        return { role: "assistant", content: text(m.content), tool_calls: m.tool_calls?.length ? toolCallsOf(m.tool_calls, at, issues) : null };
      case "tool":
        return { role: "tool", content: text(m.content), tool_call_id: m.tool_call_id };
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

function toolChoiceOf(choice: OpenAiChatRequest["tool_choice"]): ToolChoice | undefined {
  if (choice === undefined || typeof choice === "string") return choice;
  return { name: choice.function.name };
}

/** Translates a validated body; 400 naming the field for what Troupe cannot serve. */
export function toChatRequest(catalogue: Catalogue, body: OpenAiChatRequest): TranslatedChat {
  const issues: FieldIssue[] = [];
  const { messages, imageAt } = toMessages(body, issues);
  if (issues.length > 0) throw invalidRequest(issues);
  const category = imageAt ? "vision" : "text";
  const tools = body.tools?.length ? body.tools : undefined;
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
      name: t.function.name,
      description: t.function.description ?? "",
      parameters: t.function.parameters ?? { type: "object", properties: {} },
    })),
    tool_choice: tools ? toolChoiceOf(body.tool_choice) : undefined,
    top_p: body.top_p,
    stop: typeof body.stop === "string" ? [body.stop] : (body.stop ?? undefined),
    seed: body.seed,
    response_format: format,
  };
  return { request, category };
}
