// Anthropic Messages request → Troupe's one chat request
// (providers/chat-request.ts), which the router sends to any provider: the
// system prompt becomes a system message, a user turn's tool_result blocks
// become tool messages (before the turn's text, as Anthropic orders them),
// an assistant turn's tool_use blocks its tool_calls, image blocks the
// message's images (the router then wants a vision-capable model). What a
// schema cannot say is checked here, naming the field.
import { invalidRequest, TroupeError } from "../../../core/errors.ts";
import type { Catalogue } from "../../../providers/catalogue.ts";
import type { ChatMessage, ChatRequest, ToolChoice } from "../../../providers/chat-request.ts";
import type { ImageInput, ToolCall, ToolDefinition } from "../../../providers/types.ts";
import type { ContentBlockParam, CountTokensBody, MessageParam, MessagesBody } from "./schemas.ts";

/** Anthropic answers an unknown model with 404 not_found_error; so does this mount. */
export function requireModel(catalogue: Catalogue, model: string): void {
  if (!catalogue.get(model)) throw new TroupeError("not_found", `model: ${model} (GET /v1/models lists the catalogue)`);
}

type Conversation = Pick<CountTokensBody, "messages" | "system" | "tools" | "tool_choice">;

/** The conversation part (shared with count_tokens). */
export function toChatConversation(body: Conversation): Pick<ChatRequest, "messages" | "tools" | "tool_choice"> {
  const messages: ChatMessage[] = [];
  const system = typeof body.system === "string" ? body.system : body.system?.map((b) => b.text).join("\n");
  if (system) messages.push({ role: "system", content: system });
  // tool_use ids not yet answered: a tool_result must answer one (named by its Anthropic path here, not the router's).
  const open = new Set<string>();
  body.messages.forEach((m, i) => messages.push(...toChatMessages(m, i, open)));
  const tools: ToolDefinition[] | undefined = body.tools?.map((t) => ({ name: t.name, description: t.description ?? "", parameters: t.input_schema }));
  return { messages, tools, tool_choice: toolChoiceOf(body.tool_choice) };
}

export function toChatRequest(body: MessagesBody): ChatRequest {
  return {
    ...toChatConversation(body),
    model: body.model,
    // The named model first, then its equivalents at other providers when it fails (as /v1's default).
    routing_strategy: "auto",
    max_tokens: body.max_tokens,
    temperature: body.temperature,
  };
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
  if (typeof m.content === "string") return [{ role: m.role, content: m.content }];
  const at = (j: number) => `body.messages.${index}.content.${j}`;
  const texts: string[] = [];
  const images: ImageInput[] = [];
  const toolCalls: ToolCall[] = [];
  const results: ChatMessage[] = [];
  m.content.forEach((block: ContentBlockParam, j) => {
    switch (block.type) {
      case "text":
        texts.push(block.text);
        return;
      case "image":
        if (m.role !== "user") throw invalidRequest([{ path: at(j), message: "image blocks belong in user messages" }]);
        images.push(block.source.type === "base64" ? { base64: block.source.data, media_type: block.source.media_type } : { url: block.source.url });
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
  if (m.role === "assistant") {
    out.push({ role: "assistant", content, tool_calls: toolCalls.length > 0 ? toolCalls : null });
  } else if (content !== "" || images.length > 0 || results.length === 0) {
    out.push(images.length > 0 ? { role: "user", content, images } : { role: "user", content });
  }
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
