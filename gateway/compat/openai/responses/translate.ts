// A Responses API request onto Troupe's one chat request: the stored
// history (the previous_response_id chain) first, then `instructions` as the
// system message (a continuation does not inherit the earlier ones, as
// OpenAI documents), then this request's items; tools, tool choice, the
// JSON format and the reasoning request as the chat route takes them.
import { invalidRequest, type FieldIssue } from "../../../../core/errors.ts";
import type { Catalogue } from "../../../../providers/catalogue.ts";
import type { ChatMessage, ChatRequest, JsonResponseFormat, ReasoningRequest, ToolChoice } from "../../../../providers/chat-request.ts";
import { resolveModel } from "../model-name.ts";
import { parseItem, type ResponseHistory, type Reader } from "./history.ts";
import { itemId, itemsToMessages, storedItemsToMessages, type Item } from "./items.ts";
import type { InputItem, ResponseCreateBody } from "./request.ts";

export interface TranslatedResponse {
  request: ChatRequest;
  category: "text" | "vision";
  /** This request's own input items, references resolved, each with its id: what is stored. */
  input: Item[];
}

export function inputItemsOf(body: Pick<ResponseCreateBody, "input">): InputItem[] {
  if (body.input === undefined) return [];
  if (typeof body.input === "string") return [{ type: "message", role: "user", content: [{ type: "input_text", text: body.input }] }];
  return body.input;
}

const idPrefix = { message: "msg", function_call: "fc", function_call_output: "fco", reasoning: "rs", item_reference: "ref" } as const;

/** Items as stored and listed: each with an id of this response (the caller's own id kept, as OpenAI keeps it). */
export function storedInput(ulid: string, items: readonly InputItem[]): Item[] {
  return items.map((item, i) => ({ ...item, id: item.id ?? itemId(idPrefix[item.type], ulid, i, true) }));
}

function formatOf(body: Pick<ResponseCreateBody, "text">): JsonResponseFormat | undefined {
  const format = body.text?.format;
  if (!format || format.type === "text") return undefined;
  if (format.type === "json_object") return { type: "json_object" };
  return { type: "json_schema", name: format.name, schema: format.schema, strict: format.strict ?? undefined };
}

function reasoningOf(body: Pick<ResponseCreateBody, "reasoning">): ReasoningRequest | undefined {
  const effort = body.reasoning?.effort;
  if (effort == null) return undefined;
  if (effort === "none") return { off: true };
  return { effort: effort === "xhigh" ? "high" : effort };
}

function toolChoiceOf(choice: ResponseCreateBody["tool_choice"]): ToolChoice | undefined {
  if (choice === undefined || typeof choice === "string") return choice;
  return { name: choice.name };
}

type Translatable = Pick<ResponseCreateBody, "model" | "input" | "instructions" | "tools" | "tool_choice" | "previous_response_id" | "text" | "reasoning"> &
  Partial<Pick<ResponseCreateBody, "max_output_tokens" | "temperature" | "top_p" | "stream" | "routing_strategy">>;

/** The messages (history, instructions, input) and what is stored; 400 naming the field for what cannot be translated. */
export async function messagesFor(
  history: ResponseHistory,
  reader: Reader,
  body: Translatable,
  ulid: string,
  conversationItems: readonly Item[] = [],
): Promise<{ messages: ChatMessage[]; input: Item[]; imagesAt: string[] }> {
  const chained = body.previous_response_id ? await history.chain(body.previous_response_id, reader) : [];
  const earlier = conversationItems.length > 0 ? [...chained, ...storedItemsToMessages(conversationItems, parseItem)] : chained;
  const items = await history.resolve(inputItemsOf(body), reader);
  const issues: FieldIssue[] = [];
  const own = itemsToMessages(items, "input", issues);
  if (issues.length > 0) throw invalidRequest(issues);
  const system: ChatMessage[] = body.instructions ? [{ role: "system", content: body.instructions }] : [];
  const messages = [...system, ...earlier, ...own.messages];
  if (messages.length === 0) throw invalidRequest([{ path: "input", message: "give input (or previous_response_id)" }]);
  const imagesAt = own.imagesAt.length > 0 ? own.imagesAt : earlier.some((m) => m.images?.length) ? ["previous_response_id"] : [];
  return { messages, input: storedInput(ulid, items), imagesAt };
}

/** `conversationItems`: the earlier items of the conversation the request names (the Conversations API's), before this request's own. */
export async function toChatRequest(
  catalogue: Catalogue,
  history: ResponseHistory,
  reader: Reader,
  body: Translatable,
  ulid: string,
  conversationItems: readonly Item[] = [],
): Promise<TranslatedResponse> {
  const { messages, input, imagesAt } = await messagesFor(history, reader, body, ulid, conversationItems);
  const category = imagesAt.length > 0 ? "vision" : "text";
  const tools = body.tools?.length ? body.tools : undefined;
  const format = formatOf(body);
  let routed;
  try {
    routed = resolveModel(catalogue, body.model, { category, tools: tools !== undefined, streaming: body.stream === true, json: format !== undefined }, body.routing_strategy);
  } catch (error) {
    const entry = catalogue.get(body.model);
    if (imagesAt.length > 0 && entry && !entry.also.includes("vision") && entry.category === "text") {
      throw invalidRequest([{ path: imagesAt[0]!, message: `model ${entry.id} does not take images (GET /openai/v1/models; vision-capable models serve the vision category)` }]);
    }
    if (format && entry?.category === "text" && !entry.capabilities.json_output) {
      throw invalidRequest([{ path: "text.format", message: `${format.type} is not supported by model ${entry.id}; use text, or a model that can answer in JSON (OpenAI, Gemini)` }]);
    }
    throw error;
  }
  const request: ChatRequest = {
    messages,
    model: routed.model,
    routing_strategy: routed.routing_strategy,
    max_tokens: body.max_output_tokens ?? null,
    temperature: body.temperature ?? null,
    tools: tools?.map((t) => ({ name: t.name, description: t.description ?? "", parameters: t.parameters ?? { type: "object", properties: {} } })),
    tool_choice: tools ? toolChoiceOf(body.tool_choice) : undefined,
    top_p: body.top_p,
    response_format: format,
    reasoning: reasoningOf(body),
  };
  return { request, category, input };
}
