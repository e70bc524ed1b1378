// One compact request-log entry per API-key call or WebSocket (docs/operations/request-log.md):
// who called (organization, environment, key), what (route, model, provider,
// deployment), how it ended (status, error code, latency, time to first
// byte) and what it cost (tokens, nano-dollars, cache and BYOK flags when the
// usage record carries them). The prompt and the answer only when the
// project turned content logging on (tenancy/request-log-content.ts), and
// only until that content expires.
//
// Stored as a positional array (lmdb msgpack): the field names would double
// an entry's size, and a million entries is the size the log is sized for.
// The schema version comes first, so a later format can be told apart:
// version 1 is the metadata alone; version 2 is version 1's fields followed
// by a WebSocket's figures ([close code, bytes in, bytes out], or null for an
// HTTP call) and the content ([expiry, request's text, answer's text], or
// null). An HTTP entry without content is still written as version 1, and an
// entry whose content expired is rewritten without it, so both are read.
import { z } from "zod";
import type { EntryContent, LoggedText } from "./request-log-content.ts";

/** The entry as the gateway builds it and the API returns it (less `project_id`, which the store keys it by). */
export interface RequestLogEntry {
  request_id: string;
  /** When the request arrived (epoch ms). */
  created_ms: number;
  organization_id: string;
  project_id: string;
  environment_id: string;
  api_key_id: string;
  live: boolean;
  method: string;
  /** The route's template (`/v1/chat/completions`). */
  route: string;
  model: string | null;
  provider: string | null;
  /** The upstream deployment that answered, when the router names one. */
  deployment: string | null;
  status: number;
  error_code: string | null;
  /** Whole request, in 0.01 ms. */
  latency_ms: number;
  /** Until the first response byte (a stream's headers); null when nothing was written. */
  ttfb_ms: number | null;
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens: number;
  cost_nanos: number;
  /** The response cache's verdict (`hit`, `miss`, …) when the usage record carries one. */
  cache: string | null;
  /** True when the organization's own provider credential served the call; null: not recorded. */
  byok: boolean | null;
  /** The prompt and the answer, when the project logs content and it has not expired. */
  content?: EntryContent | undefined;
  /** A WebSocket's entry (written when the socket closed): its close code and the bytes of its frames. */
  websocket?: SocketFigures | undefined;
}

export interface SocketFigures {
  /** The close code the socket ended with (1000 normal, 1006 gone without a close frame, 4000 + status when refused). */
  close_code: number;
  /** Payload bytes of the client's frames. */
  bytes_in: number;
  /** Payload bytes of the frames the server sent. */
  bytes_out: number;
}

const entryVersion = 1;
const contentVersion = 2;

/** A logged text as stored: [text, original bytes, truncated]. */
type StoredText = [string, number, boolean];
/** Version 2's tail: [[close code, bytes in, bytes out] | null, [expires ms, request, answer] | null]. */
type StoredSocket = [number, number, number];
type StoredContent = [number, StoredText | null, StoredText | null];
type StoredV2 = [...Stored, StoredSocket | null, StoredContent | null];

type Stored = [
  number, // version
  number, // created_ms
  string, // organization_id
  string, // environment_id
  string, // api_key_id
  boolean, // live
  string, // method
  string, // route
  string | null, // model
  string | null, // provider
  string | null, // deployment
  number, // status
  string | null, // error_code
  number, // latency_ms
  number | null, // ttfb_ms
  number, // input_tokens
  number, // output_tokens
  number, // cached_input_tokens
  number, // cost_nanos
  string | null, // cache
  boolean | null, // byok
];

const storedText = (t: LoggedText | null): StoredText | null => (t === null ? null : [t.text, t.original_bytes, t.truncated]);
const loggedText = (t: StoredText | null): LoggedText | null => (t === null ? null : { text: t[0], original_bytes: t[1], truncated: t[2] });

/** Version 1 (metadata only), or version 2 when the entry is a socket's or carries content. */
export function storedEntry(e: RequestLogEntry): Stored | StoredV2 {
  const meta = storedMeta(e);
  if (!e.content && !e.websocket) return meta;
  meta[0] = contentVersion;
  const socket: StoredSocket | null = e.websocket ? [e.websocket.close_code, e.websocket.bytes_in, e.websocket.bytes_out] : null;
  const content: StoredContent | null = e.content ? [e.content.expires_ms, storedText(e.content.request), storedText(e.content.answer)] : null;
  return [...meta, socket, content];
}

function storedMeta(e: RequestLogEntry): Stored {
  return [
    entryVersion,
    e.created_ms,
    e.organization_id,
    e.environment_id,
    e.api_key_id,
    e.live,
    e.method,
    e.route,
    e.model,
    e.provider,
    e.deployment,
    e.status,
    e.error_code,
    e.latency_ms,
    e.ttfb_ms,
    e.input_tokens,
    e.output_tokens,
    e.cached_input_tokens,
    e.cost_nanos,
    e.cache,
    e.byok,
  ];
}

const str = z.string();
const optStr = z.string().nullable();
const num = z.number();
const metaFields = [
  num,
  str,
  str,
  str,
  z.boolean(),
  str,
  str,
  optStr,
  optStr,
  optStr,
  num,
  optStr,
  num,
  num.nullable(),
  num,
  num,
  num,
  num,
  optStr,
  z.boolean().nullable(),
] as const;
const textSchema = z.tuple([str, num, z.boolean()]).nullable();
const socketSchema = z.tuple([num, num, num]).nullable();
const contentSchema = z.tuple([num, textSchema, textSchema]).nullable();
const storedSchema = z.union([z.tuple([z.literal(entryVersion), ...metaFields]), z.tuple([z.literal(contentVersion), ...metaFields, socketSchema, contentSchema])]);

/** The entry a stored array stands for; undefined for a value this release cannot read (never a throw). */
export function entryFromStored(projectId: string, requestId: string, value: unknown): RequestLogEntry | undefined {
  const parsed = storedSchema.safeParse(value);
  if (!parsed.success) return undefined;
  const socket = parsed.data[0] === contentVersion ? parsed.data[21] : null;
  const stored = parsed.data[0] === contentVersion ? parsed.data[22] : null;
  const websocket = socket ? { close_code: socket[0], bytes_in: socket[1], bytes_out: socket[2] } : undefined;
  const content = stored ? { expires_ms: stored[0], request: loggedText(stored[1]), answer: loggedText(stored[2]) } : undefined;
  const [, created_ms, organization_id, environment_id, api_key_id, live, method, route, model, provider, deployment, status, error_code, latency_ms, ttfb_ms, input_tokens, output_tokens, cached_input_tokens, cost_nanos, cache, byok] =
    parsed.data;
  return {
    request_id: requestId,
    created_ms,
    organization_id,
    project_id: projectId,
    environment_id,
    api_key_id,
    live,
    method,
    route,
    model,
    provider,
    deployment,
    status,
    error_code,
    latency_ms,
    ttfb_ms,
    input_tokens,
    output_tokens,
    cached_input_tokens,
    cost_nanos,
    cache,
    byok,
    ...(content ? { content } : {}),
    ...(websocket ? { websocket } : {}),
  };
}

/** The stored array of an entry without its content (its content expired); a socket's figures stay. */
export function withoutContent(value: unknown): Stored | StoredV2 | undefined {
  const parsed = storedSchema.safeParse(value);
  if (!parsed.success) return undefined;
  const meta = parsed.data.slice(0, 21) as Stored;
  const socket = parsed.data[0] === contentVersion ? parsed.data[21] : null;
  if (socket) return [...meta, socket, null];
  meta[0] = entryVersion;
  return meta;
}

const loggedTextSchema = z
  .object({
    text: z.string().describe("UTF-8, at most 32 KiB; when cut, it ends with a line [truncated: N bytes in the original, 32768 kept]"),
    original_bytes: z.number().int().describe("UTF-8 bytes before it was cut"),
    truncated: z.boolean(),
  })
  .nullable();

/** The content `GET /v1/projects/{id}/requests/{request_id}` shows when the project logged it (never in the list). */
export const entryContentSchema = z
  .object({
    request: loggedTextSchema.describe("the request's prompt fields (messages, system, input, prompt, instructions, contents) as JSON"),
    answer: loggedTextSchema.describe("the answer's text (a stream's too, gathered as it was sent); null for an error, audio or vectors"),
    expires_at: z.string().describe("when the content is removed; the entry stays"),
  })
  .nullable()
  .describe("null unless the project's content logging was on for this call and the content has not expired");

/** The entry as `GET /v1/projects/{id}/requests` returns it. */
export const requestLogEntrySchema = z.object({
  request_id: z.string(),
  created_at: z.string().describe("when the request arrived (ISO 8601)"),
  organization_id: z.string(),
  project_id: z.string(),
  environment_id: z.string(),
  api_key_id: z.string(),
  live: z.boolean(),
  method: z.string(),
  route: z.string().describe("the route's template, e.g. /v1/chat/completions"),
  model: z.string().nullable(),
  provider: z.string().nullable(),
  deployment: z.string().nullable(),
  status: z.number().int(),
  error_code: z.string().nullable(),
  latency_ms: z.number(),
  ttfb_ms: z.number().nullable(),
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  cached_input_tokens: z.number().int(),
  cost_usd: z.number(),
  cache: z.string().nullable(),
  byok: z.boolean().nullable(),
  websocket: z
    .object({
      close_code: z.number().int().describe("1000 normal, 1001 going away, 1006 gone without a close frame, 4000 + the HTTP status when refused"),
      bytes_in: z.number().int().describe("payload bytes of the client's frames"),
      bytes_out: z.number().int().describe("payload bytes of the frames Troupe sent"),
    })
    .nullable()
    .describe("a WebSocket route's entry, written when the socket closed (status 101, latency_ms its open duration, ttfb_ms until the upgrade); null for an HTTP call"),
});
export type RequestLogEntryBody = z.infer<typeof requestLogEntrySchema>;
export const requestLogEntryWithContentSchema = requestLogEntrySchema.extend({ content: entryContentSchema });
export type RequestLogEntryWithContentBody = z.infer<typeof requestLogEntryWithContentSchema>;

/** The listed entry: metadata only. */
export function entryBody(e: RequestLogEntry): RequestLogEntryBody {
  const { created_ms, cost_nanos, content: _content, websocket, ...rest } = e;
  return { ...rest, created_at: new Date(created_ms).toISOString(), cost_usd: cost_nanos / 1e9, websocket: websocket ?? null };
}

/** One entry read alone: its metadata and its content (null when none was logged or it expired). */
export function entryWithContentBody(e: RequestLogEntry): RequestLogEntryWithContentBody {
  const c = e.content;
  return { ...entryBody(e), content: c ? { request: c.request, answer: c.answer, expires_at: new Date(c.expires_ms).toISOString() } : null };
}
