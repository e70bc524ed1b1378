// Responses API items ⇄ Troupe's chat messages (providers/chat-request.ts).
// Input: messages (text, images, text files), function calls and their
// outputs, reasoning items (a provider's thinking, round-tripped through
// `encrypted_content`) become ChatMessages; consecutive assistant-side items
// (reasoning, an assistant message, function calls) are one assistant turn,
// as every provider wants them. Output: a chat result becomes reasoning,
// message and function_call items with ids that name their response
// (docs/decisions.md, "Responses API"), so an `item_reference` finds them.
import { invalidRequest, type FieldIssue } from "../../../../core/errors.ts";
import type { ChatMessage } from "../../../../providers/chat-request.ts";
import type { ImageInput, ReasoningBlock, ToolCall } from "../../../../providers/types.ts";
import { imageFromUrl } from "../../../../providers/vision.ts";
import type { ContentPart, InputItem } from "./request.ts";

/** An item as stored and shown (the public JSON form). */
export type Item = Record<string, unknown>;

const ulidPattern = "[0-9A-HJKMNP-TV-Z]{26}";
const responseIdPattern = new RegExp(`^resp_(${ulidPattern})$`);
const itemIdPattern = new RegExp(`^(?:msg|fc|rs|fco|ref)_(${ulidPattern})_(i?)([0-9]{1,5})$`);

export function responseUlid(responseId: string): string | undefined {
  return responseIdPattern.exec(responseId)?.[1];
}

/** Output item n of response `ulid` (input items: `i` before the position). */
export function itemId(prefix: "msg" | "fc" | "rs" | "fco" | "ref", ulid: string, position: number, input = false): string {
  return `${prefix}_${ulid}_${input ? "i" : ""}${position}`;
}

/** Where an item id points: its response and position, or undefined for an id Troupe did not make. */
export function itemPlace(id: string): { responseId: string; input: boolean; position: number } | undefined {
  const m = itemIdPattern.exec(id);
  return m ? { responseId: `resp_${m[1]}`, input: m[2] === "i", position: Number(m[3]) } : undefined;
}

/** A thinking block as `encrypted_content`: opaque to clients, read back only by Troupe. */
export function encodeReasoning(block: ReasoningBlock): string {
  return Buffer.from(JSON.stringify({ p: block.provider, s: block.signature, r: block.redacted }), "utf8").toString("base64url");
}

function decodeReasoning(encoded: string, text: string): ReasoningBlock | undefined {
  try {
    const v: unknown = JSON.parse(Buffer.from(encoded, "base64url").toString("utf8"));
    if (typeof v !== "object" || v === null || !("p" in v) || typeof v.p !== "string") return undefined;
    const s = "s" in v && typeof v.s === "string" ? v.s : undefined;
    const r = "r" in v && typeof v.r === "string" ? v.r : undefined;
    return { provider: v.p, text, ...(s !== undefined ? { signature: s } : {}), ...(r !== undefined ? { redacted: r } : {}) };
  } catch {
    return undefined;
  }
}

/** What a text file part says, inlined; only text is read (PDFs, file ids and URLs are a 400 naming the part). */
function fileText(part: Extract<ContentPart, { type: "input_file" }>, at: string, issues: FieldIssue[]): string {
  const data = part.file_data !== undefined ? /^data:(text\/[^;,]+|application\/json)(?:;[^,]*)?;base64,(.*)$/s.exec(part.file_data) : null;
  if (!data) {
    issues.push({ path: at, message: "only text files are read: file_data as a data URL of text/* or application/json (file_id, file_url and PDFs are not supported)" });
    return "";
  }
  const name = part.filename ? `${part.filename}:\n` : "";
  return `${name}${Buffer.from(data[2]!, "base64").toString("utf8")}`;
}

interface PartsText {
  text: string;
  images: ImageInput[];
}

function partsOf(content: string | readonly ContentPart[], at: string, issues: FieldIssue[], imagesAt: string[]): PartsText {
  if (typeof content === "string") return { text: content, images: [] };
  const texts: string[] = [];
  const images: ImageInput[] = [];
  content.forEach((part, j) => {
    const here = `${at}.${j}`;
    switch (part.type) {
      case "input_text":
      case "output_text":
        texts.push(part.text);
        break;
      case "refusal":
        texts.push(part.refusal);
        break;
      case "input_file":
        texts.push(fileText(part, here, issues));
        break;
      case "input_image":
        if (!part.image_url) {
          issues.push({ path: `${here}.file_id`, message: "images are read from image_url (a URL or a data URL); file ids are not supported" });
          break;
        }
        imagesAt.push(here);
        images.push(imageFromUrl(part.image_url));
    }
  });
  return { text: texts.join("\n"), images };
}

function argumentsOf(text: string, at: string, issues: FieldIssue[]): Record<string, unknown> {
  try {
    const v: unknown = text.trim() === "" ? {} : JSON.parse(text);
    if (typeof v === "object" && v !== null && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // reported below
  }
  issues.push({ path: `${at}.arguments`, message: "must be a JSON object in a string" });
  return {};
}

/** The result of translating items: messages, and where images are (the call is then vision). */
export interface TranslatedItems {
  messages: ChatMessage[];
  imagesAt: string[];
}

/**
 * Items (references already resolved) as chat messages. `at` names the
 * items' place in the body for 400s ("input"); stored items are
 * translated with the same rules.
 */
export function itemsToMessages(items: readonly InputItem[], at: string, issues: FieldIssue[]): TranslatedItems {
  const messages: ChatMessage[] = [];
  const imagesAt: string[] = [];
  let assistant: { content: string[]; calls: ToolCall[]; reasoning: ReasoningBlock[] } | undefined;
  const flush = (): void => {
    if (!assistant) return;
    messages.push({
      role: "assistant",
      content: assistant.content.join("\n"),
      tool_calls: assistant.calls.length > 0 ? assistant.calls : null,
      ...(assistant.reasoning.length > 0 ? { reasoning: assistant.reasoning } : {}),
    });
    assistant = undefined;
  };
  const turn = () => (assistant ??= { content: [], calls: [], reasoning: [] });
  items.forEach((item, i) => {
    const here = `${at}.${i}`;
    switch (item.type) {
      case "reasoning": {
        const text = item.summary.map((s) => s.text).join("\n");
        const block = item.encrypted_content ? decodeReasoning(item.encrypted_content, text) : undefined;
        // Thinking without Troupe's encoding (another gateway's, or none) has nothing a provider would take back.
        if (block) turn().reasoning.push(block);
        return;
      }
      case "function_call":
        turn().calls.push({ id: item.call_id, name: item.name, arguments: argumentsOf(item.arguments, here, issues) });
        return;
      case "message":
        if (item.role === "assistant") {
          const parts = partsOf(item.content, `${here}.content`, issues, []);
          if (parts.text !== "") turn().content.push(parts.text);
          return;
        }
        flush();
        {
          const parts = partsOf(item.content, `${here}.content`, issues, imagesAt);
          if (item.role === "user") messages.push(parts.images.length > 0 ? { role: "user", content: parts.text, images: parts.images } : { role: "user", content: parts.text });
          else messages.push({ role: "system", content: parts.text });
        }
        return;
      case "function_call_output": {
        flush();
        const parts = partsOf(item.output, `${here}.output`, issues, imagesAt);
        messages.push({ role: "tool", content: parts.text, tool_call_id: item.call_id });
        return;
      }
      case "item_reference":
        issues.push({ path: `${here}.id`, message: "an item reference must be resolved before translation" });
    }
  });
  flush();
  return { messages, imagesAt };
}

/** Items read back from the store, as input items (the same schema checks them). */
export function storedItemsToMessages(items: readonly Item[], parse: (item: Item) => InputItem | undefined): ChatMessage[] {
  const parsed = items.flatMap((item) => {
    const p = parse(item);
    return p ? [p] : [];
  });
  const issues: FieldIssue[] = [];
  const { messages } = itemsToMessages(parsed, "previous_response_id", issues);
  if (issues.length > 0) throw invalidRequest(issues);
  return messages;
}
