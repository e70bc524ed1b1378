// Runs one request of a declared route (route.ts): admission (admission.ts:
// credential → scope → rate limit) → body/query/path validation → the scope
// the body's input needs (image input: vision) → the
// route's billing (route-billing.ts: admitted before the handler, 402 before
// any provider call) → handler → its reservation settled or released → the
// answer. Errors are rendered once (error-responder.ts), in the route's
// dialect; in-flight accounting, metrics and the request line (request-log.ts)
// end every request.
import type { HttpResponse } from "uWebSockets.js";
import { isTroupeError } from "../core/errors.ts";
import { refusalOf, type Metrics, type RouteMetrics } from "../core/metrics.ts";
import { allowlistOfKey, withModelAllowlist } from "../providers/router-allowlist.ts";
import { rateLimitHeaders } from "../tenancy/key-rate-limit.ts";
import { StreamedAnswer, type LoggedText } from "../tenancy/request-log-content.ts";
import { checkInputScope, refusedKeyOf, type Admission } from "./admission.ts";
import { cacheRequestOf, withCacheRequest } from "./cache/cache-request.ts";
import type { AuthContext } from "./auth-context.ts";
import type { ErrorResponder } from "./error-responder.ts";
import { HandlerContext } from "./handler-context.ts";
import { tokenEstimate } from "./token-estimate.ts";
import { writeJson, writeResponse, type CapturedRequest, type ResponseState } from "./http-io.ts";
import { decodePathParam } from "./request-guards.ts";
import type { RequestLog } from "./request-log.ts";
import { admitRoute, type RouteBill } from "./route-billing.ts";
import { streamed, type RouteDefinition, type RouteResult } from "./route.ts";
import { isMultipartType, parseJsonBody, parseMultipartBody, parseQuery, parseWith } from "./validation.ts";

export interface RouteRunnerDeps {
  admission: Admission;
  requestLog: RequestLog;
  errors: ErrorResponder;
  metrics: Metrics;
  /** Cookies get `Secure` when the public URL is https. */
  secureCookies: boolean;
  /** Called once when a request ends (the server's in-flight count). */
  finished(): void;
  /** Called once when a request ends, with what the request log keeps of it (tenancy/request-log.ts); never awaited. */
  callEnded?: CallEndedHook | undefined;
  /** Whether a billed API-key call runs its handler inside its cache control's async context; absent: every one does. */
  usesCacheRequest?: UsesCacheRequest | undefined;
}

/**
 * True when something inside the handler reads the request's cache control
 * (cache-request.ts): the project has the response cache on, or its
 * organization stored its own provider keys (the BYOK resolver reads the
 * owner from it). Asked so a call that needs neither never enters an
 * AsyncLocalStorage: in Node 22 the first run() in a process turns on
 * promise hooks that every promise pays for afterwards (docs/decisions.md).
 */
export type UsesCacheRequest = (auth: AuthContext & { kind: "api_key" }) => boolean | Promise<boolean>;

/** The request log's end of a call, and whether it wants a stream's answer text gathered as it is sent. */
export interface CallEndedHook {
  (call: EndedCall): void;
  /** True when this API key's project logs content (asked only on a route that streams); absent: never gathered. */
  keepsStreamText?: ((auth: AuthContext & { kind: "api_key" }) => boolean | Promise<boolean>) | undefined;
}

/** A request as it ended: its credential (undefined when admission refused it) and the error it was answered with. */
export interface EndedCall {
  requestId: string;
  method: string;
  route: string;
  auth: AuthContext | undefined;
  state: ResponseState;
  /** performance.now() when it arrived. */
  startedMs: number;
  error: unknown;
  /** The body's `model`, when it named one (a call that failed before any usage was recorded still says what it asked for). */
  model: string | undefined;
  /** The parsed body (the request log's content, when a project logs it); never the headers. */
  body: unknown;
  /** What the handler answered: its JSON body or JSON text; undefined for a stream, bytes or an error. */
  answer: unknown;
  /** A stream's answer text, bounded, when callEnded.keepsStreamText asked for it; undefined otherwise. */
  streamedAnswer?: LoggedText | undefined;
  /** A WebSocket that closed (ws-route.ts): its close code, payload bytes each way, and when it was upgraded (performance.now()). */
  socket?: { closeCode: number; bytesIn: number; bytesOut: number; upgradedMs: number } | undefined;
}

/** One request through the pipeline; `body` is the body being read (methods that carry one). */
export type RunRoute = (
  route: RouteDefinition,
  paramNames: string[],
  req: CapturedRequest,
  res: HttpResponse,
  state: ResponseState,
  requestId: string,
  body: Promise<Buffer> | undefined,
  recorder: RouteMetrics | undefined,
) => Promise<void>;

const noParams: Record<string, string> = Object.freeze({}) as Record<string, string>;

export function createRouteRunner(deps: RouteRunnerDeps): RunRoute {
  const { admission, requestLog, errors, metrics, secureCookies, finished, callEnded, usesCacheRequest } = deps;

  /** One async function per request: the pipeline, its error rendering, in-flight accounting and the request line. */
  return async (route, paramNames, req, res, state, requestId, bodyPromise, recorder) => {
    const started = requestLog.enabled || recorder || callEnded ? performance.now() : 0;
    let endCall: (() => void) | undefined;
    let releaseTokens: (() => void) | undefined;
    let admittedAuth: AuthContext | undefined;
    let failure: unknown;
    let requestedModel: string | undefined;
    let endedBody: unknown;
    let answer: unknown;
    let streamedAnswer: StreamedAnswer | undefined;
    try {
      // Awaits only when something is not already in memory (cold key, Redis).
      const admitted = admission.admit(route, req.method, req.headers, req.query);
      const auth: AuthContext = admitted instanceof Promise ? await admitted : admitted;
      admittedAuth = auth;
      endCall = admission.enterCall?.(auth);
      // A key's model allowlist: every plan made while billing and handling the request applies it (router-allowlist.ts).
      const allow = auth.kind === "api_key" ? allowlistOfKey(auth.key) : undefined;
      // A billed call's cache control (troupe-cache headers; 400 when malformed, whether or not the project caches): read by the cached router of the text routes (gateway/cache/).
      let cache = auth.kind === "api_key" && route.billing ? cacheRequestOf(auth.key, req.headers, state, requestId) : undefined;
      if (cache && auth.kind === "api_key" && usesCacheRequest) {
        const uses = usesCacheRequest(auth);
        if (!(uses instanceof Promise ? await uses : uses)) cache = undefined;
      }
      if (auth.kind === "api_key" && auth.rateLimit) {
        state.headers = route.dialect?.rateLimitHeaders ? route.dialect.rateLimitHeaders(rateLimitHeaders(auth.rateLimit)) : rateLimitHeaders(auth.rateLimit);
      }
      let body: unknown;
      if (bodyPromise) {
        const raw = await bodyPromise;
        const contentType = req.headers["content-type"];
        const multipart = route.bodyType === "multipart" || (route.bodyType === "json-or-multipart" && isMultipartType(contentType));
        const parsed = multipart ? await parseMultipartBody(raw, contentType) : parseJsonBody(raw, contentType);
        body = route.body ? (route.fastBody?.(parsed) ?? parseWith(route.body, parsed === undefined ? {} : parsed, "body")) : undefined;
        if (callEnded) {
          requestedModel = modelOf(body);
          endedBody = body;
        }
        if (route.inputScope) checkInputScope(auth, route.inputScope(body));
        // An AI call of a token-limited key reserves its estimate now, as a budget reserves money (settled by its bill).
        if (route.billing && !multipart) {
          const held = admission.reserveTokens?.(auth, requestId, tokenEstimate(raw.length, body));
          releaseTokens = held instanceof Promise ? await held : held;
        }
      }
      const query = route.query ? parseWith(route.query, parseQuery(req.query), "query") : undefined;
      let params: Record<string, string> = noParams;
      if (paramNames.length > 0) {
        params = {};
        for (let i = 0; i < paramNames.length; i++) {
          const name = paramNames[i] ?? "";
          params[name] = decodePathParam(name, req.params[i] ?? "");
        }
      }
      // A streaming route's answer text is gathered only for a project that logs content: nothing is gathered otherwise.
      const keeps = route.streams && auth.kind === "api_key" ? callEnded?.keepsStreamText?.(auth) : false;
      if (keeps instanceof Promise ? await keeps : keeps) streamedAnswer = new StreamedAnswer();
      const ctx = new HandlerContext(res, state, requestId, params, body, query, req.headers, auth, secureCookies, streamedAnswer);
      // Billing before the handler: no await unless a reservation is needed (a hard-limited live project).
      let bill: RouteBill | undefined;
      const billing = route.billing;
      if (billing) {
        const admittedBill = allow ? withModelAllowlist(allow, () => admitRoute(billing, ctx)) : admitRoute(billing, ctx);
        bill = admittedBill instanceof Promise ? await admittedBill : admittedBill;
        ctx.billed = bill;
      }
      let result: RouteResult;
      try {
        const handle = () => (allow ? withModelAllowlist(allow, () => route.handler(ctx)) : route.handler(ctx));
        result = await (cache ? withCacheRequest(cache, handle) : handle());
      } catch (error) {
        // A failed handler bills nothing: its reservation is released before the error is answered.
        const released = bill?.release();
        if (released) await released;
        throw error;
      }
      // Not settled by ctx.bill (work billed elsewhere, a stream cut short): released before the answer.
      const released = bill?.release();
      if (released) await released;
      if (callEnded && result !== streamed) answer = "jsonText" in result ? result.jsonText : "body" in result ? result.body : undefined;
      writeResult(res, state, requestId, ctx, result);
    } catch (error) {
      failure = error;
      if (recorder && isTroupeError(error)) {
        const refusal = refusalOf(error.code);
        if (refusal) metrics.refusal(refusal, route.path);
      }
      errors.sendError(res, state, requestId, error, req, false, route.dialect);
    } finally {
      endCall?.();
      releaseTokens?.();
      finished();
      recorder?.observe(state.status, (performance.now() - started) / 1000);
      requestLog.write(state, { requestId, method: req.method, route: route.path, query: req.query, startedMs: started });
      callEnded?.({ requestId, method: req.method, route: route.path, auth: admittedAuth ?? refusedKeyOf(failure), state, startedMs: started, error: failure, model: requestedModel, body: endedBody, answer, streamedAnswer: streamedAnswer?.logged() });
    }
  };
}

function modelOf(body: unknown): string | undefined {
  if (typeof body !== "object" || body === null || !("model" in body)) return undefined;
  return typeof body.model === "string" ? body.model : undefined;
}

/** Writes what the handler answered: JSON (the fast path: one corked write), JSON text as it is, bytes, or nothing for a stream it already wrote. */
function writeResult(res: HttpResponse, state: ResponseState, requestId: string, ctx: HandlerContext, result: RouteResult): void {
  if (result === streamed) return;
  if ("bytes" in result) {
    writeResponse(res, state, result.status, [["x-request-id", requestId], ["content-type", result.contentType]], result.bytes);
    return;
  }
  const isText = "jsonText" in result;
  const body = isText ? result.jsonText : result.body === undefined ? undefined : JSON.stringify(result.body);
  const extraHeaders = isText ? undefined : result.headers;
  if (!ctx.cookies && !extraHeaders && body !== undefined) {
    writeJson(res, state, result.status, requestId, body);
    return;
  }
  const headers: [string, string][] = [["x-request-id", requestId]];
  if (body !== undefined) headers.push(["content-type", "application/json"]);
  if (ctx.cookies) for (const c of ctx.cookies) headers.push(["set-cookie", c]);
  if (extraHeaders) for (const [k, v] of Object.entries(extraHeaders)) headers.push([k, v]);
  writeResponse(res, state, result.status, headers, body);
}
