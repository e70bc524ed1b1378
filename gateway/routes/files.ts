// GET/HEAD /v1/files/{id} (docs/api/media.md): media results, served
// without credentials because the id is the capability (128 random bits).
// Binary and streamed with backpressure, so it is attached to the uWS app
// directly rather than declared as a JSON route: Content-Type and
// Content-Length, single byte ranges (206, 416) honoured only while
// If-Range (when sent) names the current ETag, a strong ETag with
// If-Match (412 when it does not hold) and If-None-Match (304), and a
// year-long immutable Cache-Control — a file never changes under its id. Any replica serves any file when the store is S3.
import type { HttpRequest, HttpResponse, TemplatedApp } from "uWebSockets.js";
import { errorBody, TroupeError } from "../../core/errors.ts";
import type { Logger } from "../../core/log.ts";
import { statusLine } from "../../core/http-status.ts";
import { delivering } from "../../core/uws-delivery.ts";
import type { ByteRange, FileStore, StoredFile } from "../../media/file-store.ts";
import { bodyFraming, endHead } from "../http-io.ts";
import type { RawPath } from "../openapi.ts";
import { framingError } from "../request-guards.ts";
import { pickRequestId } from "../request-id.ts";
import { createRequestLog, type RequestEntry } from "../request-log.ts";

export const filesPath = "/v1/files/:id";
const cacheControl = "public, max-age=31536000, immutable";

/** What a Range header asks of a file of `size` bytes. */
export type RangeAnswer = { kind: "whole" } | { kind: "partial"; range: ByteRange } | { kind: "unsatisfiable" };

/**
 * One `bytes=` range (first-last, first-, or -suffix). Anything else — other
 * units, several ranges, garbage — is ignored and the whole file is sent,
 * which RFC 9110 §14.2 allows.
 */
export function parseRange(header: string | undefined, size: number): RangeAnswer {
  if (!header) return { kind: "whole" };
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === "" && m[2] === "")) return { kind: "whole" };
  if (m[1] === "") {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) return { kind: "unsatisfiable" };
    return { kind: "partial", range: { start: Math.max(0, size - suffix), end: size - 1 } };
  }
  const start = Number(m[1]);
  const end = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (m[2] !== "" && Number(m[2]) < start) return { kind: "whole" };
  if (start >= size) return { kind: "unsatisfiable" };
  return { kind: "partial", range: { start, end } };
}

/**
 * Whether a Range request may be answered with a part (RFC 9110 §13.1.5):
 * always without If-Range; with it, only when it is exactly this strong
 * ETag. A weak tag, another tag or a date (files carry no Last-Modified, so
 * no date can be shown to match) means the client's copy may differ: the
 * whole file is sent, 200, never a part of something else.
 */
export function rangeStillApplies(ifRange: string | undefined, etag: string): boolean {
  return ifRange === undefined || ifRange.trim() === etag;
}

/**
 * Whether an If-Match header holds (RFC 9110 §13.1.1): absent, `*`, or a
 * list naming this strong ETag (a weak tag never matches: strong
 * comparison). Anything else, an empty value included, is a 412.
 */
export function ifMatchHolds(header: string | undefined, etag: string): boolean {
  if (header === undefined) return true;
  return header.split(",").some((t) => t.trim() === "*" || t.trim() === etag);
}

/**
 * The range and conditional headers of a file request, read in one pass
 * so that an empty value counts as sent (getHeader answers "" for both) and
 * a repeated one is seen (getHeader answers the first only).
 */
export interface FileConditions {
  /** Undefined when Range came twice: which one the client meant is unknown, so it is ignored (RFC 9110 §14.2 allows it) and the whole file sent. */
  range: string | undefined;
  /** A repeated If-Range is a value no ETag equals: it never matches, so the whole file is sent. */
  ifRange: string | undefined;
  /** If-Match and If-None-Match are lists: repeated headers are joined with commas (RFC 9110 §5.3). */
  ifMatch: string | undefined;
  ifNoneMatch: string | undefined;
}

const conditionHeaders = new Set(["range", "if-range", "if-match", "if-none-match"]);
const repeatedIfRange = "repeated If-Range";

export function readConditions(req: Pick<HttpRequest, "forEach">): FileConditions {
  const seen = new Map<string, string[]>();
  req.forEach((name, value) => {
    if (!conditionHeaders.has(name)) return;
    const values = seen.get(name);
    if (values) values.push(value);
    else seen.set(name, [value]);
  });
  const range = seen.get("range");
  const ifRange = seen.get("if-range");
  return {
    range: range?.length === 1 ? range[0] : undefined,
    ifRange: ifRange && ifRange.length > 1 ? repeatedIfRange : ifRange?.[0],
    ifMatch: seen.get("if-match")?.join(", "),
    ifNoneMatch: seen.get("if-none-match")?.join(", "),
  };
}

/** True when an If-None-Match header names this ETag (or is `*`). */
export function etagMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(",").some((t) => {
    const tag = t.trim().replace(/^W\//, "");
    return tag === "*" || tag === etag;
  });
}

export function attachFiles(app: TemplatedApp, store: FileStore, log: Logger): void {
  const requestLog = createRequestLog(log);
  const handler = (headOnly: boolean) => (res: HttpResponse, req: HttpRequest) => {
    delivering(res);
    const startedMs = requestLog.enabled ? performance.now() : 0;
    // Ids are `file_` + base64url: never percent-encoded, so the raw segment is
    // looked up as it is (a malformed escape is simply not found, never decoded).
    const id = req.getParameter(0) ?? "";
    const conditions = readConditions(req);
    const requestId = pickRequestId(req.getHeader("x-request-id") || undefined);
    const state: ServeState = { aborted: false, iterator: undefined, status: 0, bytes: 0 };
    res.onAborted(() => {
      state.aborted = true;
      void state.iterator?.return?.();
    });
    const line: RequestEntry = { requestId, method: headOnly ? "HEAD" : "GET", route: filesPath, query: req.getQuery() ?? "", startedMs };
    // Ambiguous framing: refused and closed, as on every other path (server.ts refuseFraming, after uWS parsed what it holds).
    const framing = bodyFraming(req);
    if (framing) {
      const error = framingError(framing);
      setImmediate(() => {
        if (!state.aborted) endWith(res, state, headOnly, 400, [["content-type", "application/json"], ["x-request-id", requestId]], JSON.stringify(errorBody(error, requestId)), true);
        requestLog.write(state, line);
      });
      return;
    }
    serveFile(res, state, store, id, conditions, headOnly, requestId)
      .catch((error: unknown) => {
        log.error("file serving failed", { request_id: requestId, file_id: id, error });
        if (state.aborted) return;
        // Headers may already be out: then the only honest signal is closing the connection.
        try {
          res.close();
        } catch {
          // already closed
        }
      })
      .then(() => requestLog.write(state, line));
  };
  app.get(filesPath, handler(false));
  app.head(filesPath, handler(true));
}

interface ServeState {
  aborted: boolean;
  iterator: AsyncIterator<Buffer> | undefined;
  /** The status written (0 until then) and the body bytes sent: what the request line reports. */
  status: number;
  bytes: number;
}

async function serveFile(
  res: HttpResponse,
  state: ServeState,
  store: FileStore,
  id: string,
  { range: rangeHeader, ifRange, ifMatch, ifNoneMatch }: FileConditions,
  headOnly: boolean,
  requestId: string,
): Promise<void> {
  const file = await store.head(id);
  if (state.aborted) return;
  if (!file) {
    const error = new TroupeError("not_found", `no file ${id}`);
    endWith(res, state, headOnly, 404, [["content-type", "application/json"], ["x-request-id", requestId]], JSON.stringify(errorBody(error, requestId)));
    return;
  }
  const common = fileHeaders(file, requestId);
  // If-Match before If-None-Match and Range (RFC 9110 §13.2.2).
  if (!ifMatchHolds(ifMatch, file.etag)) {
    const error = new TroupeError("precondition_failed", `If-Match does not name the file's ETag ${file.etag}`);
    endWith(res, state, headOnly, 412, [["content-type", "application/json"], ["etag", file.etag], ["x-request-id", requestId]], JSON.stringify(errorBody(error, requestId)));
    return;
  }
  if (etagMatches(ifNoneMatch, file.etag)) {
    endWith(res, state, headOnly, 304, common.filter(([k]) => k !== "content-type"), undefined);
    return;
  }
  const answer = rangeStillApplies(ifRange, file.etag) ? parseRange(rangeHeader, file.size) : ({ kind: "whole" } as const);
  if (answer.kind === "unsatisfiable") {
    const error = new TroupeError("invalid_request", `range ${rangeHeader} is outside the file's ${file.size} bytes`);
    endWith(res, state, headOnly, 416, [["content-type", "application/json"], ["content-range", `bytes */${file.size}`], ["x-request-id", requestId]], JSON.stringify(errorBody(error, requestId)));
    return;
  }
  const status = answer.kind === "partial" ? 206 : 200;
  const headers = answer.kind === "partial" ? [...common, ["content-range", `bytes ${answer.range.start}-${answer.range.end}/${file.size}`] as [string, string]] : common;
  const length = answer.kind === "partial" ? answer.range.end - answer.range.start + 1 : file.size;
  if (headOnly || length === 0) {
    state.status = status;
    res.cork(() => {
      res.writeStatus(statusLine(status));
      for (const [k, v] of headers) res.writeHeader(k, v);
      // HEAD: announce the length the GET would send, without a body.
      endHead(res, length);
    });
    return;
  }
  const got = await store.get(id, answer.kind === "partial" ? answer.range : undefined);
  if (state.aborted) return;
  if (!got) {
    // Deleted between head and get.
    const error = new TroupeError("not_found", `no file ${id}`);
    endWith(res, state, headOnly, 404, [["content-type", "application/json"], ["x-request-id", requestId]], JSON.stringify(errorBody(error, requestId)));
    return;
  }
  await streamBody(res, state, status, headers, got.body, length);
}

function fileHeaders(file: StoredFile, requestId: string): [string, string][] {
  return [
    ["content-type", file.content_type],
    ["etag", file.etag],
    ["cache-control", cacheControl],
    ["accept-ranges", "bytes"],
    // Served from the API's origin: never sniffed into HTML, never a script context.
    ["x-content-type-options", "nosniff"],
    ["content-security-policy", "default-src 'none'; sandbox"],
    ["x-request-id", requestId],
  ];
}

/** A whole answer; for a HEAD, its head only, with the Content-Length the GET's body has. */
function endWith(res: HttpResponse, state: ServeState, headOnly: boolean, status: number, headers: [string, string][], body: string | undefined, closeConnection = false): void {
  state.status = status;
  if (body !== undefined && !headOnly) state.bytes = Buffer.byteLength(body);
  res.cork(() => {
    res.writeStatus(statusLine(status));
    for (const [k, v] of headers) res.writeHeader(k, v);
    if (body === undefined) res.endWithoutBody(0, closeConnection);
    else if (headOnly) endHead(res, Buffer.byteLength(body), closeConnection);
    else res.end(body, closeConnection);
  });
}

/**
 * Streams `total` bytes with uWS's tryEnd: it writes Content-Length itself,
 * and when the socket is full we wait for onWritable and resend the unsent
 * tail of the chunk (the VideoStreamer pattern from the uWS examples).
 */
async function streamBody(
  res: HttpResponse,
  state: ServeState,
  status: number,
  headers: [string, string][],
  body: AsyncIterable<Buffer>,
  total: number,
): Promise<void> {
  const iterator = body[Symbol.asyncIterator]();
  state.iterator = iterator;
  let first = true;
  try {
    while (!state.aborted) {
      const next = await iterator.next();
      if (next.done || state.aborted) break;
      const chunk = next.value;
      let ok = false;
      let done = false;
      let offsetBefore = 0;
      res.cork(() => {
        if (first) {
          state.status = status;
          res.writeStatus(statusLine(status));
          for (const [k, v] of headers) res.writeHeader(k, v);
          first = false;
        }
        offsetBefore = res.getWriteOffset();
        [ok, done] = res.tryEnd(toArrayBuffer(chunk), total);
      });
      if (done) {
        state.bytes += chunk.byteLength;
        return;
      }
      if (!ok) {
        await new Promise<void>((resolve) => {
          res.onWritable((offset) => {
            if (state.aborted) {
              resolve();
              return true;
            }
            const [ok2, done2] = res.tryEnd(toArrayBuffer(chunk.subarray(offset - offsetBefore)), total);
            if (ok2 || done2) resolve();
            return ok2;
          });
        });
      }
      if (!state.aborted) state.bytes += chunk.byteLength;
    }
    if (!state.aborted) {
      // The store's body ended short of the length already announced.
      throw new Error("file body ended before its announced length");
    }
  } finally {
    await iterator.return?.();
  }
}

function toArrayBuffer(b: Buffer): ArrayBuffer {
  return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
}

/** OpenAPI entry for the path (served outside the JSON route list). */
const fileParameters = [
  { name: "id", in: "path", required: true, schema: { type: "string", pattern: "^file_[A-Za-z0-9_-]{22}$" } },
  { name: "Range", in: "header", required: false, schema: { type: "string" } },
  { name: "If-Match", in: "header", required: false, schema: { type: "string" } },
  { name: "If-None-Match", in: "header", required: false, schema: { type: "string" } },
  { name: "If-Range", in: "header", required: false, schema: { type: "string" } },
];
const errorJson = { "application/json": { schema: { $ref: "#/components/schemas/Error" } } };
const fileResponses = {
  "200": { description: "The file's bytes (Content-Type as stored; ETag; Cache-Control immutable)" },
  "206": { description: "The requested byte range (Content-Range)" },
  "304": { description: "Not modified (If-None-Match named the ETag)" },
  "404": { description: "not_found (no such file)", content: errorJson },
  "412": { description: "precondition_failed (If-Match does not name the ETag)", content: errorJson },
  "416": { description: "invalid_request (range outside the file; Content-Range: bytes */size)", content: errorJson },
};

/** The document's view of GET/HEAD /v1/files/{id} (the handlers are attached by attachFiles). */
export const filesRawPath: RawPath = {
  path: filesPath,
  operations: {
    get: { summary: "A stored media file (the id is the capability: no credentials)", tags: ["files"], security: [], parameters: fileParameters, responses: fileResponses },
    head: { summary: "A stored media file's headers (Content-Length, ETag)", tags: ["files"], security: [], parameters: fileParameters, responses: fileResponses },
  },
};
