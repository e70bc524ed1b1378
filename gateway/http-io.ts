// Low-level uWS request/response mechanics, kept apart from the pipeline:
// copying what we need out of `req` before any await, reading a body with a
// size cap, and writing corked responses (uWS invalidates `req` at the
// first await, and uncorked writes after one are a syscall each).
import type { HttpRequest, HttpResponse } from "uWebSockets.js";
import { errorBody, TroupeError } from "../core/errors.ts";
import { statusLine } from "../core/http-status.ts";
import { delivering, writeWhenCorkable } from "../core/uws-delivery.ts";
import { answerThenDiscard, type Discard } from "./lingering-close.ts";
import { credentialConflict, framingConflict, type FramingProblem } from "./request-guards.ts";
import type { RouteDialect } from "./route.ts";

export interface CapturedRequest {
  method: string;
  url: string;
  query: string;
  headers: Record<string, string>;
  /** Still percent-encoded: decoding can fail, and that must happen where errors are answered. */
  params: string[];
  /** Set when the body framing is ambiguous (request-guards.ts); the request is then refused. */
  framing: FramingProblem | undefined;
}

export function captureRequest(req: HttpRequest, paramCount: number): CapturedRequest {
  const headers: Record<string, string> = {};
  let framing: FramingProblem | undefined;
  req.forEach((name, value) => {
    if (name === "content-length" || name === "transfer-encoding") framing ??= framingConflict(name, value, headers);
    else framing ??= credentialConflict(name, headers);
    headers[name] = value;
  });
  const params: string[] = [];
  for (let i = 0; i < paramCount; i++) params.push(req.getParameter(i) ?? "");
  return { method: req.getCaseSensitiveMethod(), url: req.getUrl(), query: req.getQuery() ?? "", headers, params, framing };
}

/**
 * The framing and credential checks of captureRequest for handlers that do
 * not copy every header (the files route, the unrouted fallback).
 */
export function bodyFraming(req: HttpRequest): FramingProblem | undefined {
  const seen: Record<string, string> = {};
  let framing: FramingProblem | undefined;
  req.forEach((name, value) => {
    if (name === "content-length" || name === "transfer-encoding") framing ??= framingConflict(name, value, seen);
    else framing ??= credentialConflict(name, seen);
    seen[name] = value;
  });
  return framing;
}

/**
 * Per-response state uWS needs us to track. The AbortSignal is made only
 * when a handler asks for it: most requests never need one, and an
 * AbortController per request is measurable at tens of thousands per second.
 */
export class ResponseState {
  aborted = false;
  done = false;
  /** The status written (0 until then): what the request metrics and spans record. */
  status = 0;
  /** Headers every answer to this request carries, whatever it is (an API key's X-RateLimit-*). */
  headers: [string, string][] | undefined;
  /** A HEAD request: every answer goes out as the GET's would (its status, headers, Content-Length), without the body. */
  head = false;
  /** Body bytes written (none for a HEAD): what the request line reports. */
  bytes = 0;
  /** performance.now() when the status line was written (0 until then): the request log's time to first byte. */
  firstByteMs = 0;
  private controller: AbortController | undefined;
  private listeners: (() => void)[] | undefined;

  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    if (this.aborted && !this.controller.signal.aborted) this.controller.abort();
    return this.controller.signal;
  }

  onAbort(listener: () => void): void {
    if (this.aborted) listener();
    else (this.listeners ??= []).push(listener);
  }

  markAborted(): void {
    this.aborted = true;
    this.controller?.abort();
    for (const listener of this.listeners ?? []) listener();
    this.listeners = undefined;
  }
}

/**
 * Reads the whole body, refusing more than maxBytes with 413 as soon as the
 * declared or received size passes it. The 413 goes out at once and the
 * rest of the body is read and discarded (lingering-close.ts); the promise
 * then rejects with the same error, which finds the response already sent.
 * uWS hands out a reused ArrayBuffer, so each kept chunk is copied.
 */
export function readBody(
  res: HttpResponse,
  state: ResponseState,
  declaredLength: number | undefined,
  maxBytes: number,
  requestId: string,
  dialect?: RouteDialect,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let discard: Discard | undefined;
    const refuse = (): Discard => {
      const error = tooLarge(maxBytes);
      const answer = errorAnswer(error, requestId, dialect);
      discard = answerThenDiscard(res, state, answer.status, answer.headers, answer.body);
      reject(error);
      return discard;
    };
    if (declaredLength !== undefined && declaredLength > maxBytes) refuse();
    // Most bodies arrive in one chunk: keep it without an array.
    let first: Buffer | undefined;
    let more: Buffer[] | undefined;
    let received = 0;
    res.onData((chunk, isLast) => {
      delivering(res);
      if (discard) {
        discard(chunk.byteLength, isLast);
        return;
      }
      received += chunk.byteLength;
      if (received > maxBytes) {
        refuse()(0, isLast);
        return;
      }
      const copy = Buffer.from(chunk.slice(0));
      if (first === undefined) first = copy;
      else (more ??= [first]).push(copy);
      if (isLast) resolve(more ? Buffer.concat(more, received) : first);
    });
    state.onAbort(() => reject(new TroupeError("invalid_request", "client went away")));
  });
}

/**
 * An error as written: Troupe's body and status, or the route's dialect's
 * (a compatibility mount), with Retry-After when the error has one.
 */
export function errorAnswer(error: TroupeError, requestId: string, dialect?: RouteDialect): { status: number; headers: [string, string][]; body: string } {
  const headers: [string, string][] = [
    ["content-type", "application/json"],
    ["x-request-id", requestId],
  ];
  if (error.retryAfterSeconds !== undefined) headers.push(["retry-after", String(error.retryAfterSeconds)]);
  if (!dialect) return { status: error.status, headers, body: JSON.stringify(errorBody(error, requestId)) };
  const answer = dialect.renderError(error, requestId);
  if (answer.headers) headers.push(...answer.headers);
  return { status: answer.status, headers, body: JSON.stringify(answer.body) };
}

function tooLarge(maxBytes: number): TroupeError {
  return new TroupeError("payload_too_large", `the request body exceeds the limit of ${maxBytes} bytes`, { details: { max_bytes: maxBytes } });
}

/** Marks the response as answered with `status`; false when the client is gone or it was answered already (the caller writes nothing). */
function begin(state: ResponseState, status: number): boolean {
  if (state.aborted || state.done) return false;
  state.done = true;
  state.status = status;
  state.firstByteMs = performance.now();
  return true;
}

/**
 * Ends a HEAD answer whose status and headers are written: the Content-Length
 * its GET's body has, and nothing after the head. The length is written as a
 * header, not by uWS's endWithoutBody(length): uWS then waits for that many
 * body bytes, which never come, so the response never completes —
 * `Connection: close` is ignored, and the next request on the connection
 * finds a response pending and uWS drops the connection. uWS closes after an
 * answer only when it wrote the length itself, so an answer that must close
 * the connection (refused framing) says Content-Length: 0 instead.
 */
export function endHead(res: HttpResponse, contentLength: number, closeConnection = false): void {
  if (closeConnection) {
    res.endWithoutBody(0, true);
    return;
  }
  res.writeHeader("content-length", String(contentLength));
  res.endWithoutBody();
}

/** Ends an answer whose status and headers are written: with its body, or for a HEAD without it. */
function endAnswer(res: HttpResponse, state: ResponseState, body: string | Buffer | undefined, closeConnection: boolean): void {
  const length = body === undefined ? 0 : Buffer.byteLength(body);
  if (state.head) {
    endHead(res, length, closeConnection);
    return;
  }
  state.bytes = length;
  res.end(body, closeConnection);
}

/** The common case: a JSON body with the request id and nothing else. */
export function writeJson(res: HttpResponse, state: ResponseState, status: number, requestId: string, body: string): void {
  if (!begin(state, status)) return;
  writeWhenCorkable(res, state, () =>
    res.cork(() => {
      res.writeStatus(statusLine(status));
      res.writeHeader("x-request-id", requestId);
      res.writeHeader("content-type", "application/json");
      if (state.headers) for (const [name, value] of state.headers) res.writeHeader(name, value);
      endAnswer(res, state, body, false);
    }),
  );
}

/** Writes a whole response in one cork (a HEAD's without its body); a no-op once the client is gone. */
export function writeResponse(
  res: HttpResponse,
  state: ResponseState,
  status: number,
  headers: [string, string][],
  body: string | Buffer | undefined,
  closeConnection = false,
): void {
  if (!begin(state, status)) return;
  writeWhenCorkable(res, state, () =>
    res.cork(() => {
      res.writeStatus(statusLine(status));
      for (const [name, value] of headers) res.writeHeader(name, value);
      if (state.headers) for (const [name, value] of state.headers) res.writeHeader(name, value);
      if (status === 204) res.endWithoutBody(0, closeConnection);
      else endAnswer(res, state, body, closeConnection);
    }),
  );
}
