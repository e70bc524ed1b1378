// What a request-log entry keeps of a call's content when its project turned
// content logging on (tenancy/request-log-settings.ts): the request's
// messages or input and the answer's text (a stream's as it is sent), each bounded to
// `contentCapBytes` of UTF-8. Longer text is cut at a character boundary and
// ends with a marker naming its original size; `truncated` and
// `original_bytes` say the same for a program.
//
// Only the fields that carry a prompt are read from the request body
// (`messages`, `system`, `input`, `prompt`, `instructions`, `contents`), and
// only text from the answer; headers, and so credentials, are never read.

/** 32 KiB each side: a long conversation's prompt fits, a pasted book does not. */
export const contentCapBytes = 32 * 1024;

export interface LoggedText {
  text: string;
  /** UTF-8 bytes of the text before it was cut. */
  original_bytes: number;
  truncated: boolean;
}

export interface EntryContent {
  /** When the content is removed from the entry (epoch ms); the entry's metadata stays. */
  expires_ms: number;
  /** The request's prompt fields as JSON, e.g. {"messages":[…]}; null when the body had none. */
  request: LoggedText | null;
  /** The answer's text (a stream's too, gathered as it was sent); null when the answer had none (an error, audio, vectors). */
  answer: LoggedText | null;
}

const promptFields = ["system", "instructions", "messages", "input", "prompt", "contents"] as const;

/**
 * `text` bounded to `capBytes` of UTF-8, with the marker when it was cut.
 * `originalBytes`: the size of the whole when `text` is only its beginning
 * (a stream's answer, whose rest was counted, not kept).
 */
export function boundedText(text: string, capBytes = contentCapBytes, originalBytes?: number): LoggedText {
  const bytes = Buffer.from(text, "utf8");
  const original = originalBytes ?? bytes.length;
  if (original <= capBytes) return { text, original_bytes: original, truncated: false };
  let end = Math.min(capBytes, bytes.length);
  // Back to the first byte of a character (continuation bytes are 10xxxxxx).
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end -= 1;
  const kept = bytes.subarray(0, end).toString("utf8");
  return { text: `${kept}\n[truncated: ${original} bytes in the original, ${capBytes} kept]`, original_bytes: original, truncated: true };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The request's prompt fields as JSON text; undefined when the body names none. */
export function requestContentOf(body: unknown): string | undefined {
  if (!isRecord(body)) return undefined;
  const kept: Record<string, unknown> = {};
  for (const name of promptFields) if (body[name] !== undefined) kept[name] = body[name];
  return Object.keys(kept).length === 0 ? undefined : JSON.stringify(kept);
}

function texts(parts: unknown, pick: (part: Record<string, unknown>) => unknown): string[] {
  if (!Array.isArray(parts)) return [];
  const out: string[] = [];
  for (const part of parts) {
    if (!isRecord(part)) continue;
    const t = pick(part);
    if (typeof t === "string") out.push(t);
  }
  return out;
}

/**
 * The answer's text in each dialect Troupe answers in: Troupe's own
 * (`content`), OpenAI chat (`choices[].message.content`), the Responses API
 * (`output_text`, or `output[].content[].text`), Anthropic (`content[].text`)
 * and Gemini (`candidates[].content.parts[].text`). `answer` is the JSON
 * body, or JSON text as a route answered it. Undefined: no text.
 */
export function answerTextOf(answer: unknown): string | undefined {
  let body = answer;
  if (typeof body === "string") {
    try {
      body = JSON.parse(body) as unknown;
    } catch {
      return undefined;
    }
  }
  if (!isRecord(body)) return undefined;
  const found: string[] = [];
  if (typeof body["content"] === "string") found.push(body["content"]);
  else found.push(...texts(body["content"], (p) => (p["type"] === "text" ? p["text"] : undefined)));
  for (const choice of Array.isArray(body["choices"]) ? body["choices"] : []) {
    if (isRecord(choice) && isRecord(choice["message"]) && typeof choice["message"]["content"] === "string") found.push(choice["message"]["content"]);
  }
  if (typeof body["output_text"] === "string") found.push(body["output_text"]);
  else for (const item of Array.isArray(body["output"]) ? body["output"] : []) if (isRecord(item)) found.push(...texts(item["content"], (p) => p["text"]));
  for (const candidate of Array.isArray(body["candidates"]) ? body["candidates"] : []) {
    if (isRecord(candidate) && isRecord(candidate["content"])) found.push(...texts(candidate["content"]["parts"], (p) => p["text"]));
  }
  return found.length === 0 ? undefined : found.join("\n");
}

/**
 * The answer text one stream event carries, in each dialect Troupe streams
 * in: Troupe's own (`{delta}`), OpenAI chat chunks (`choices[].delta.content`),
 * the Responses API (`response.output_text.delta`), Anthropic
 * (`content_block_delta` with a `text_delta`) and Gemini (the text parts of
 * `candidates[].content.parts`). Thinking, tool calls and their arguments
 * are not the answer's text. Undefined: the event carries none.
 */
export function streamTextOf(event: unknown): string | undefined {
  if (!isRecord(event)) return undefined;
  const delta = event["delta"];
  if (typeof delta === "string") {
    const type = event["type"];
    return type === undefined || type === "response.output_text.delta" ? delta : undefined;
  }
  if (isRecord(delta)) return delta["type"] === "text_delta" && typeof delta["text"] === "string" ? delta["text"] : undefined;
  const found: string[] = [];
  for (const choice of Array.isArray(event["choices"]) ? event["choices"] : []) {
    if (isRecord(choice) && isRecord(choice["delta"]) && typeof choice["delta"]["content"] === "string") found.push(choice["delta"]["content"]);
  }
  for (const candidate of Array.isArray(event["candidates"]) ? event["candidates"] : []) {
    if (isRecord(candidate) && isRecord(candidate["content"])) found.push(...texts(candidate["content"]["parts"], (p) => (p["thought"] === true ? undefined : p["text"])));
  }
  return found.length === 0 ? undefined : found.join("");
}

/**
 * A stream's answer text, gathered event by event as the stream is sent
 * (only for a project that logs content). Bounded: once `contentCapBytes`
 * are kept, later text is only counted, for `original_bytes`.
 */
export class StreamedAnswer {
  #parts: string[] = [];
  #keptBytes = 0;
  #bytes = 0;

  /** One event as the route sent it (any dialect). */
  add(event: unknown): void {
    const text = streamTextOf(event);
    if (text === undefined || text === "") return;
    const bytes = Buffer.byteLength(text, "utf8");
    this.#bytes += bytes;
    if (this.#keptBytes >= contentCapBytes) return;
    this.#parts.push(text);
    this.#keptBytes += bytes;
  }

  /** The text the entry keeps, cut at the cap with its marker; undefined when the stream sent no text. */
  logged(): LoggedText | undefined {
    return this.#bytes === 0 ? undefined : boundedText(this.#parts.join(""), contentCapBytes, this.#bytes);
  }
}

/** The content an entry keeps of a call: undefined when neither side has any. `streamed`: a stream's answer, as StreamedAnswer kept it. */
export function entryContentOf(body: unknown, answer: unknown, expiresMs: number, streamed?: LoggedText): EntryContent | undefined {
  const request = requestContentOf(body);
  const text = streamed === undefined ? answerTextOf(answer) : undefined;
  const answered = streamed ?? (text === undefined ? null : boundedText(text));
  if (request === undefined && answered === null) return undefined;
  return { expires_ms: expiresMs, request: request === undefined ? null : boundedText(request), answer: answered };
}
