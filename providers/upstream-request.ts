// Outbound HTTP for adapters: the lean keep-alive HTTP/1.1 client in
// http1/ (one per provider; TCP_NODELAY on every socket, so keep-alive
// requests never wait on Nagle's algorithm), a caller AbortSignal on every
// call, and upstream failures turned into classified ProviderCallErrors.
import { Http1Client, type StreamingResponse, type UpstreamRequest } from "./http1/client.ts";
import { HttpParseError } from "./http1/response-parser.ts";
import { ProviderCallError } from "./errors.ts";

export type UpstreamClient = Http1Client;

/** How much of an upstream error body goes into the error message. */
const maxErrorBodyBytes = 2000;

export function createUpstreamClient(maxConnectionsPerOrigin = 256): UpstreamClient {
  // 30 s idle keep-alive: upstream APIs keep connections open about that long.
  return new Http1Client({ maxConnectionsPerOrigin, keepAliveMs: 30_000 });
}

export interface SendOptions {
  method?: "GET" | "POST" | "DELETE";
  headers: Record<string, string>;
  body?: unknown;
  signal: AbortSignal;
}

type ResponseBody = AsyncIterable<Buffer>;

function upstreamRequest(url: string, opts: SendOptions): UpstreamRequest {
  return {
    method: opts.method ?? "POST",
    url,
    // A Buffer body is sent as is with the caller's content type (multipart); anything else is JSON.
    headers: opts.body === undefined || Buffer.isBuffer(opts.body) ? opts.headers : { "content-type": "application/json", ...opts.headers },
    body: opts.body === undefined ? null : Buffer.isBuffer(opts.body) ? opts.body : JSON.stringify(opts.body),
    signal: opts.signal,
  };
}

/** Sends a request; resolves with the streaming body of a 2xx answer, throws ProviderCallError otherwise. */
export async function send(provider: string, client: UpstreamClient, url: string, opts: SendOptions): Promise<ResponseBody> {
  let res: StreamingResponse;
  try {
    res = await client.request(upstreamRequest(url, opts));
  } catch (e) {
    throw wrapTransportError(provider, e, opts.signal);
  }
  if (res.status >= 200 && res.status < 300) return res.body;
  let text = "";
  try {
    // Only the start of an error body is kept; leaving the loop early closes the connection.
    const chunks: Buffer[] = [];
    let bytes = 0;
    for await (const chunk of res.body) {
      chunks.push(chunk);
      bytes += chunk.length;
      if (bytes >= maxErrorBodyBytes) break;
    }
    text = Buffer.concat(chunks).toString("utf8").slice(0, maxErrorBodyBytes);
  } catch {
    // The error body is informative only; the status already says what happened.
  }
  throw statusError(provider, res.status, text, res.headers["retry-after"]);
}

/** Sends a request and resolves with the parsed JSON of a 2xx answer; throws ProviderCallError otherwise. */
export async function sendForJson(provider: string, client: UpstreamClient, url: string, opts: SendOptions): Promise<unknown> {
  let res;
  try {
    res = await client.requestBuffered(upstreamRequest(url, opts));
  } catch (e) {
    throw wrapTransportError(provider, e, opts.signal);
  }
  const text = res.body.toString("utf8");
  if (res.status < 200 || res.status >= 300) throw statusError(provider, res.status, text.slice(0, maxErrorBodyBytes), res.headers["retry-after"]);
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ProviderCallError(provider, "protocol", `${provider} sent invalid JSON`, { cause: e });
  }
}

function statusError(provider: string, status: number, text: string, retryAfter: string | undefined): ProviderCallError {
  return new ProviderCallError(provider, "http", `${provider} answered ${status}: ${upstreamMessage(text)}`, {
    status,
    retryAfter,
  });
}

/** Aborts propagate as they are (the router knows why it aborted); a malformed answer is a protocol failure; the rest is a connection failure. */
export function wrapTransportError(provider: string, e: unknown, signal: AbortSignal): unknown {
  if (signal.aborted) return signal.reason ?? e;
  if (e instanceof ProviderCallError) return e;
  if (e instanceof HttpParseError) return new ProviderCallError(provider, "protocol", `${provider} sent a malformed HTTP response: ${e.message}`, { cause: e });
  const message = e instanceof Error ? e.message : String(e);
  return new ProviderCallError(provider, "connection", `${provider} connection failed: ${message}`, { cause: e });
}

function upstreamMessage(text: string): string {
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === "object" && "error" in parsed) {
      const err = (parsed as { error: unknown }).error;
      if (typeof err === "string") return err;
      if (err && typeof err === "object" && "message" in err && typeof err.message === "string") return err.message;
    }
    if (parsed && typeof parsed === "object" && "message" in parsed && typeof parsed.message === "string") return parsed.message;
  } catch {
    // not JSON: fall through to the raw text
  }
  return text || "(empty body)";
}
