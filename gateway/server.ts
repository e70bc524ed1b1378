// The uWebSockets.js gateway: one handler per declared route (uWS matches
// the paths), the request pipeline (request id → admission (admission.ts:
// credential → scope → rate limit) → body/query validation → handler), one
// error body, health endpoints, the OpenAPI document, and graceful shutdown.
import "./uws-settings.ts";
import * as uWS from "uWebSockets.js";
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from "uWebSockets.js";
import { errorBody, isTroupeError, TroupeError } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import { noMetrics, refusalOf, type Metrics, type RouteMetrics } from "../core/metrics.ts";
import { noTracing, type Tracing } from "../core/tracing.ts";
import type { AuthContext } from "./auth-context.ts";
import type { Admission } from "./admission.ts";
import { bodyFraming, captureRequest, errorAnswer, readBody, ResponseState, writeHead, writeJson, writeResponse, type CapturedRequest } from "./http-io.ts";
import { listenExclusive } from "./exclusive-listen.ts";
import { buildOpenApi, type RawPath } from "./openapi.ts";
import { loadedPageState } from "./uws-error-pages.ts";
import { decodePathParam, framingError, uriTooLong, type FramingProblem } from "./request-guards.ts";
import { streamed, type CookieSpec, type RouteContext, type RouteDefinition, type RouteDialect, type RouteResult, type SseWriter, type WsRouteDefinition } from "./route.ts";
import { pickRequestId } from "./request-id.ts";
import { openSse } from "./sse.ts";
import { rateLimitHeaders } from "../tenancy/key-rate-limit.ts";
import { isMultipartType, parseJsonBody, parseMultipartBody, parseQuery, parseWith } from "./validation.ts";

export interface GatewayOptions {
  routes: RouteDefinition[];
  /** Credential, scope and rate limit: the same step the WebSocket upgrades use. */
  admission: Admission;
  log: Logger;
  maxBodyBytes: number;
  /** Cookies get `Secure` when the public URL is https. */
  secureCookies: boolean;
  /** Answers /readyz: true once every backing service is usable. */
  ready: () => Promise<boolean>;
  openApiInfo: { title: string; version: string };
  /** WebSocket routes (attached by their modules, ws-route.ts): here for the OpenAPI document. */
  wsRoutes?: readonly WsRouteDefinition[];
  /** Paths whose handlers are attached to the app directly (files): for the document and the 405 answers. */
  rawPaths?: readonly RawPath[];
  /** Plain (non-/v1, undocumented) GET pages served like /healthz: the console, /docs. */
  pages?: readonly PlainPage[];
  /** Request metrics (one observation per request); default off. */
  metrics?: Metrics;
  /** A server span per request, continuing the caller's `traceparent`; default off. */
  tracing?: Tracing;
}

/** What a plain page sees of its request (copied before any await). */
export interface PageRequest {
  url: string;
  query: string;
  headers: Readonly<Record<string, string>>;
}

export interface PageAnswer {
  status: number;
  contentType: string;
  body: string | Buffer;
  headers?: readonly [string, string][];
}

/** A GET (and HEAD) path outside the API: served as /healthz is, absent from the OpenAPI document. */
export interface PlainPage {
  path: string;
  respond(req: PageRequest): Promise<PageAnswer>;
}

export interface Gateway {
  /** Listens; /v1 requests get 503 (Retry-After 1) until open(): the features start between the two. */
  listen(host: string, port: number): Promise<number>;
  /** Starts serving /v1 (and /readyz may answer ready). */
  open(): void;
  /** Stops accepting, waits for in-flight requests (up to graceMs), then closes. */
  shutdown(graceMs: number): Promise<void>;
  readonly app: TemplatedApp;
}

const bodyMethods = new Set(["post", "put", "patch"]);

export function createGateway(options: GatewayOptions): Gateway {
  const app = uWS.App();
  const { log } = options;
  let inflight = 0;
  let draining = false;
  // Until open(): listening (so the public URL is known) while the actor host and features start.
  let opened = false;
  let listenSocket: us_listen_socket | undefined;
  const drainWaiters: (() => void)[] = [];
  const accessLog = log.enabled("info");
  const metrics = options.metrics ?? noMetrics;
  const tracing = options.tracing ?? noTracing;
  // Built on first request, then cached: generating it (zod → JSON Schema for
  // every route) costs tens of milliseconds the start-up need not pay.
  let openApi: string | undefined;
  const openApiJson = (): string => (openApi ??= JSON.stringify(buildOpenApi(options.routes, options.openApiInfo, options.wsRoutes, options.rawPaths)));
  if (loadedPageState() !== "json") log.warn("uWS's own 400/431/505 answers are HTML, not the JSON error body: run `npm run patch:uws` (see README, HTTP limits)");

  const finished = (): void => {
    inflight -= 1;
    if (inflight === 0) for (const w of drainWaiters.splice(0)) w();
  };

  const sendError = (
    res: HttpResponse,
    state: ResponseState,
    requestId: string,
    error: unknown,
    req?: CapturedRequest,
    closeConnection = false,
    dialect?: RouteDialect,
  ): void => {
    // The client went away: nothing to answer and nothing to report (its abort surfaces as an error here).
    if (state.aborted) return;
    let troupe: TroupeError;
    if (isTroupeError(error)) troupe = error;
    else {
      log.error("unhandled error", { request_id: requestId, path: req?.url, error });
      troupe = new TroupeError("internal_error");
    }
    const answer = errorAnswer(troupe, requestId, dialect);
    // Refused at admission (429): the error carries the window; later, the state does.
    if (troupe.headers && !state.headers) answer.headers.push(...(dialect?.rateLimitHeaders ? dialect.rateLimitHeaders(troupe.headers) : troupe.headers));
    writeResponse(res, state, answer.status, answer.headers, answer.body, closeConnection);
  };

  /**
   * The last resort: whatever escaped the pipeline (a throw in a uWS
   * callback, an error body that cannot be serialized) is logged and
   * answered with a plain 500, never left to end the process.
   */
  const guard = (res: HttpResponse, state: ResponseState, requestId: string, error: unknown): void => {
    log.error("request handling failed", { request_id: requestId, error });
    try {
      writeResponse(res, state, 500, [["content-type", "application/json"], ["x-request-id", requestId]], JSON.stringify(errorBody(new TroupeError("internal_error"), requestId)));
    } catch (writeError) {
      log.error("could not answer a failed request", { request_id: requestId, error: writeError });
    }
  };

  /**
   * Refused, and the connection closed: what follows on it cannot be
   * trusted to be a request. Answered after uWS has parsed what it already
   * holds: a request pipelined behind this one then finds this response
   * pending, and uWS closes the connection without serving it (answering
   * at once would let it be served).
   */
  const refuseFraming = (res: HttpResponse, state: ResponseState, requestId: string, framing: FramingProblem, dialect?: RouteDialect): void => {
    const error = framingError(framing);
    setImmediate(() => sendError(res, state, requestId, error, undefined, true, dialect));
  };

  for (const route of options.routes) {
    const paramNames = [...route.path.matchAll(/:([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1] ?? "");
    // A DELETE reads a body only when it declares one (deleting an organization carries its confirmation).
    const hasBody = bodyMethods.has(route.method) || (route.method === "delete" && route.body !== undefined);
    const recorder = metrics.enabled ? metrics.route(route.method, route.path) : undefined;
    const spanName = `${route.method.toUpperCase()} ${route.path}`;
    register(app, route.method, route.path, (res, req) => {
      const state = new ResponseState();
      res.onAborted(() => state.markAborted());
      let requestId = "";
      try {
        const captured = captureRequest(req, paramNames.length);
        requestId = pickRequestId(captured.headers["x-request-id"]);
        if (captured.framing) {
          refuseFraming(res, state, requestId, captured.framing, route.dialect);
          return;
        }
        const tooLong = uriTooLong(captured.url, captured.query);
        if (tooLong) {
          sendError(res, state, requestId, tooLong, captured, false, route.dialect);
          return;
        }
        if (draining || !opened) {
          const message = draining ? "the server is shutting down" : "the server is starting";
          sendError(res, state, requestId, new TroupeError("service_unavailable", message, { retryAfterSeconds: 1 }), captured, false, route.dialect);
          return;
        }
        inflight += 1;
        const declared = captured.headers["content-length"];
        const body = hasBody ? readBody(res, state, declared === undefined ? undefined : Number(declared), options.maxBodyBytes, requestId, route.dialect) : undefined;
        body?.catch(() => undefined); // handled where awaited; this only marks it observed
        const served = tracing.enabled
          ? tracing.inSpan(spanName, { kind: "server", carrier: captured.headers, attributes: { "http.request.method": captured.method.toUpperCase(), "http.route": route.path } }, async (span) => {
              await serve(route, paramNames, captured, res, state, requestId, body, recorder);
              span.setAttribute("http.response.status_code", state.status);
              if (state.status >= 500) span.fail(new Error(`answered ${state.status}`));
            })
          : serve(route, paramNames, captured, res, state, requestId, body, recorder);
        served.catch((error: unknown) => guard(res, state, requestId, error));
      } catch (error) {
        guard(res, state, requestId || pickRequestId(undefined), error);
      }
    });
  }

  /** One async function per request: the pipeline, its error rendering, in-flight accounting and the access log. */
  const serve = async (
    route: RouteDefinition,
    paramNames: string[],
    req: CapturedRequest,
    res: HttpResponse,
    state: ResponseState,
    requestId: string,
    bodyPromise: Promise<Buffer> | undefined,
    recorder: RouteMetrics | undefined,
  ): Promise<void> => {
    const started = accessLog || recorder ? performance.now() : 0;
    try {
      // Awaits only when something is not already in memory (cold key, Redis).
      const admitted = options.admission.admit(route, req.method, req.headers);
      const auth: AuthContext = admitted instanceof Promise ? await admitted : admitted;
      if (auth.kind === "api_key" && auth.rateLimit) {
        state.headers = route.dialect?.rateLimitHeaders ? route.dialect.rateLimitHeaders(rateLimitHeaders(auth.rateLimit)) : rateLimitHeaders(auth.rateLimit);
      }
      let body: unknown;
      if (bodyPromise) {
        const raw = await bodyPromise;
        const contentType = req.headers["content-type"];
        const multipart = route.bodyType === "multipart" || (route.bodyType === "json-or-multipart" && isMultipartType(contentType));
        const parsed = multipart ? await parseMultipartBody(raw, contentType) : parseJsonBody(raw, contentType);
        body = route.body ? parseWith(route.body, parsed === undefined ? {} : parsed, "body") : undefined;
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
      const ctx = new HandlerContext(res, state, requestId, params, body, query, req.headers, auth, options.secureCookies);
      const result: RouteResult = await route.handler(ctx);
      if (result === streamed) return;
      if ("bytes" in result) {
        writeResponse(res, state, result.status, [["x-request-id", requestId], ["content-type", result.contentType]], result.bytes);
        return;
      }
      if (!ctx.cookies && !result.headers && result.body !== undefined) {
        writeJson(res, state, result.status, requestId, JSON.stringify(result.body));
        return;
      }
      const headers: [string, string][] = [["x-request-id", requestId]];
      if (result.body !== undefined) headers.push(["content-type", "application/json"]);
      if (ctx.cookies) for (const c of ctx.cookies) headers.push(["set-cookie", c]);
      if (result.headers) for (const [k, v] of Object.entries(result.headers)) headers.push([k, v]);
      writeResponse(res, state, result.status, headers, result.body === undefined ? undefined : JSON.stringify(result.body));
    } catch (error) {
      if (recorder && isTroupeError(error)) countRefusal(error, route.path);
      sendError(res, state, requestId, error, req, false, route.dialect);
    } finally {
      finished();
      recorder?.observe(state.status, (performance.now() - started) / 1000);
      if (accessLog) {
        log.info("request", { request_id: requestId, method: req.method, path: req.url, duration_ms: Math.round((performance.now() - started) * 100) / 100, aborted: state.aborted });
      }
    }
  };

  /**
   * Refuses ambiguous framing and over-long URLs for the handlers below,
   * which do not go through captureRequest. True when the request may go on.
   */
  const admitted = (res: HttpResponse, req: HttpRequest, state: ResponseState, requestId: string): boolean => {
    const framing = bodyFraming(req);
    if (framing) {
      refuseFraming(res, state, requestId, framing);
      return false;
    }
    const tooLong = uriTooLong(req.getUrl(), req.getQuery() ?? "");
    if (tooLong) sendError(res, state, requestId, tooLong);
    return tooLong === undefined;
  };

  // GET and HEAD (the same headers and Content-Length, no body: load balancers probe with HEAD).
  const plain = (path: string, respond: () => Promise<{ status: number; body: string }>) => {
    const handler = (head: boolean) => (res: HttpResponse, req: HttpRequest) => {
      const requestId = pickRequestId(req.getHeader("x-request-id"));
      const state = new ResponseState();
      res.onAborted(() => state.markAborted());
      if (!admitted(res, req, state, requestId)) return;
      const headers: [string, string][] = [["content-type", "application/json"], ["x-request-id", requestId]];
      respond()
        .then(({ status, body }) => (head ? writeHead(res, state, status, headers, Buffer.byteLength(body)) : writeResponse(res, state, status, headers, body)))
        .catch((error: unknown) => sendError(res, state, requestId, error))
        .catch((error: unknown) => guard(res, state, requestId, error));
    };
    app.get(path, handler(false));
    app.head(path, handler(true));
  };
  const countRefusal = (error: TroupeError, path: string): void => {
    const refusal = refusalOf(error.code);
    if (refusal) metrics.refusal(refusal, path);
  };

  for (const page of options.pages ?? []) {
    const handler = (head: boolean) => (res: HttpResponse, req: HttpRequest) => {
      const requestId = pickRequestId(req.getHeader("x-request-id"));
      const state = new ResponseState();
      res.onAborted(() => state.markAborted());
      if (!admitted(res, req, state, requestId)) return;
      const headers: Record<string, string> = {};
      req.forEach((name, value) => {
        headers[name] = value;
      });
      const pageRequest: PageRequest = { url: req.getUrl(), query: req.getQuery() ?? "", headers };
      page
        .respond(pageRequest)
        .then((answer) => {
          const out: [string, string][] = [["content-type", answer.contentType], ["x-request-id", requestId], ...(answer.headers ?? [])];
          if (head) writeHead(res, state, answer.status, out, Buffer.byteLength(answer.body));
          else writeResponse(res, state, answer.status, out, answer.body);
        })
        .catch((error: unknown) => sendError(res, state, requestId, error))
        .catch((error: unknown) => guard(res, state, requestId, error));
    };
    app.get(page.path, handler(false));
    app.head(page.path, handler(true));
  }
  const plainPaths = ["/healthz", "/readyz", "/v1/openapi.json", ...(options.pages ?? []).map((p) => p.path)];
  plain("/healthz", async () => ({ status: 200, body: '{"status":"ok"}' }));
  plain("/readyz", async () => {
    const ok = opened && !draining && (await options.ready().catch(() => false));
    return { status: ok ? 200 : 503, body: JSON.stringify({ status: ok ? "ready" : "not_ready" }) };
  });
  plain("/v1/openapi.json", async () => ({ status: 200, body: openApiJson() }));

  // Anything else: 426 on a WebSocket path without an upgrade, 405 when the
  // path exists under another method, else 404. Runs only for requests no
  // route took, so the pattern scan costs nothing on the served paths.
  const toRegex = (path: string) => new RegExp("^" + path.replace(/:[^/]+/g, "[^/]+") + "/?$");
  const patterns = [
    ...options.routes.map((r) => ({ method: r.method.toUpperCase(), regex: toRegex(r.path) })),
    ...plainPaths.flatMap((path) => ["GET", "HEAD"].map((method) => ({ method, regex: toRegex(path) }))),
    ...(options.rawPaths ?? []).flatMap((raw) => Object.keys(raw.operations).map((method) => ({ method: method.toUpperCase(), regex: toRegex(raw.path) }))),
  ];
  const upgradeOnly = (options.wsRoutes ?? []).map((route) => ({ route, regex: toRegex(route.path) }));
  app.any("/*", (res, req) => {
    const requestId = pickRequestId(req.getHeader("x-request-id"));
    const state = new ResponseState();
    res.onAborted(() => state.markAborted());
    try {
      if (!admitted(res, req, state, requestId)) return;
      const url = req.getUrl();
      const method = req.getCaseSensitiveMethod().toUpperCase();
      const headers: [string, string][] = [["content-type", "application/json"], ["x-request-id", requestId]];
      const ws = upgradeOnly.find((w) => w.regex.test(url));
      if (ws && method !== "GET") {
        headers.push(["allow", "GET"]);
        const error = new TroupeError("method_not_allowed", `${method} is not allowed on ${url}; allowed: GET (WebSocket upgrade)`);
        writeResponse(res, state, error.status, headers, JSON.stringify(errorBody(error, requestId)));
        return;
      }
      if (ws) {
        // Credentials first, as on every route (and as the document's security says): a plain GET
        // without a valid credential is 401/403/429, and only an admitted one learns it must upgrade.
        const copied: Record<string, string> = {};
        req.forEach((name, value) => (copied[name] = value));
        Promise.resolve()
          .then(() => options.admission.admit(ws.route, "GET", copied))
          .then(() => {
            headers.push(["upgrade", "websocket"], ["connection", "Upgrade"]);
            const error = new TroupeError("upgrade_required", `${url} serves WebSocket upgrades only: send Upgrade: websocket`);
            writeResponse(res, state, error.status, headers, JSON.stringify(errorBody(error, requestId)));
          })
          .catch((error: unknown) => sendError(res, state, requestId, error))
          .catch((error: unknown) => guard(res, state, requestId, error));
        return;
      }
      const allowed = patterns.filter((p) => p.regex.test(url)).map((p) => p.method);
      if (allowed.length > 0 && !allowed.includes(method)) {
        const error = new TroupeError("method_not_allowed", `${method} is not allowed on ${url}; allowed: ${allowed.join(", ")}`);
        headers.push(["allow", allowed.join(", ")]);
        writeResponse(res, state, 405, headers, JSON.stringify(errorBody(error, requestId)));
        return;
      }
      sendError(res, state, requestId, new TroupeError("not_found", `no route for ${method} ${url}`));
    } catch (error) {
      guard(res, state, requestId, error);
    }
  });

  return {
    app,
    async listen(host, port) {
      const socket = await listenExclusive(app, host, port, () => new Error(`could not listen on port ${port} of ${host}: the port is in use (or not available to this process)`));
      listenSocket = socket;
      return uWS.us_socket_local_port(socket);
    },
    open() {
      opened = true;
    },
    async shutdown(graceMs) {
      draining = true;
      if (listenSocket) uWS.us_listen_socket_close(listenSocket);
      listenSocket = undefined;
      if (inflight > 0) {
        await Promise.race([new Promise<void>((r) => drainWaiters.push(r)), new Promise<void>((r) => setTimeout(r, graceMs).unref())]);
      }
      app.close();
    },
  };
}

function register(app: TemplatedApp, method: RouteDefinition["method"], path: string, handler: (res: HttpResponse, req: HttpRequest) => void): void {
  switch (method) {
    case "get":
      app.get(path, handler);
      return;
    case "post":
      app.post(path, handler);
      return;
    case "put":
      app.put(path, handler);
      return;
    case "patch":
      app.patch(path, handler);
      return;
    case "delete":
      app.del(path, handler);
      return;
  }
}

const noParams: Record<string, string> = Object.freeze({}) as Record<string, string>;

/**
 * What a handler sees. A class, so a request allocates one object and no
 * per-request closures (this is on the hot path of every call).
 */
class HandlerContext implements RouteContext<unknown, unknown> {
  readonly requestId: string;
  readonly params: Record<string, string>;
  readonly body: unknown;
  readonly query: unknown;
  readonly headers: Readonly<Record<string, string>>;
  readonly auth: AuthContext;
  cookies: string[] | undefined;
  private readonly res: HttpResponse;
  private readonly state: ResponseState;
  private readonly secureCookies: boolean;

  constructor(
    res: HttpResponse,
    state: ResponseState,
    requestId: string,
    params: Record<string, string>,
    body: unknown,
    query: unknown,
    headers: Record<string, string>,
    auth: AuthContext,
    secureCookies: boolean,
  ) {
    this.res = res;
    this.state = state;
    this.requestId = requestId;
    this.params = params;
    this.body = body;
    this.query = query;
    this.headers = headers;
    this.auth = auth;
    this.secureCookies = secureCookies;
  }

  get signal(): AbortSignal {
    return this.state.signal;
  }

  get remoteAddress(): string {
    // Read lazily: only login needs it. An aborted response may no longer be touched.
    return this.state.aborted ? "" : Buffer.from(this.res.getRemoteAddressAsText()).toString();
  }

  sse(headers?: readonly [string, string][]): SseWriter {
    return openSse(this.res, this.state, this.requestId, headers);
  }

  setCookie(cookie: CookieSpec): void {
    (this.cookies ??= []).push(formatCookie(cookie, this.secureCookies));
  }
}

function formatCookie(cookie: CookieSpec, secure: boolean): string {
  const parts = [`${cookie.name}=${encodeURIComponent(cookie.value)}`, "Path=/", `Max-Age=${cookie.maxAgeSeconds}`, "SameSite=Lax"];
  if (cookie.httpOnly) parts.push("HttpOnly");
  if (secure) parts.push("Secure");
  return parts.join("; ");
}
