// Outbound HTTP for adapters: undici with one keep-alive Agent per provider
// (undici sets TCP_NODELAY on its sockets, so keep-alive requests never wait on
// Nagle's algorithm), a caller AbortSignal on every call, and upstream
// failures turned into classified ProviderCallErrors.
import { Agent, request, type Dispatcher } from "undici";
import { ProviderCallError, parseRetryAfterMs } from "./errors.ts";

export function createDispatcher(connections = 256): Dispatcher {
  // 30 s idle keep-alive: upstream APIs keep connections open about that long.
  return new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000, connections, pipelining: 1 });
}

export interface SendOptions {
  method?: "GET" | "POST";
  headers: Record<string, string>;
  body?: unknown;
  signal: AbortSignal;
}

export type ResponseBody = Dispatcher.ResponseData["body"];

/** Sends a request; resolves with the body of a 2xx answer, throws ProviderCallError otherwise. */
export async function send(provider: string, dispatcher: Dispatcher, url: string, opts: SendOptions): Promise<ResponseBody> {
  let res: Dispatcher.ResponseData;
  try {
    res = await request(url, {
      dispatcher,
      method: opts.method ?? "POST",
      headers: opts.body === undefined ? opts.headers : { "content-type": "application/json", ...opts.headers },
      body: opts.body === undefined ? null : JSON.stringify(opts.body),
      signal: opts.signal,
    });
  } catch (e) {
    throw wrapTransportError(provider, e, opts.signal);
  }
  if (res.statusCode >= 200 && res.statusCode < 300) return res.body;
  let text = "";
  try {
    text = (await res.body.text()).slice(0, 2000);
  } catch {
    // The error body is informative only; the status already says what happened.
  }
  throw new ProviderCallError(provider, "http", `${provider} answered ${res.statusCode}: ${upstreamMessage(text)}`, {
    status: res.statusCode,
    retryAfterMs: parseRetryAfterMs(res.headers["retry-after"]),
  });
}

/** Reads and JSON-parses a whole body. */
export async function readJson(provider: string, body: ResponseBody, signal: AbortSignal): Promise<unknown> {
  let text: string;
  try {
    text = await body.text();
  } catch (e) {
    throw wrapTransportError(provider, e, signal);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ProviderCallError(provider, "protocol", `${provider} sent invalid JSON`, { cause: e });
  }
}

/** Aborts propagate as they are (the router knows why it aborted); the rest is a connection failure. */
export function wrapTransportError(provider: string, e: unknown, signal: AbortSignal): unknown {
  if (signal.aborted) return signal.reason ?? e;
  if (e instanceof ProviderCallError) return e;
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
