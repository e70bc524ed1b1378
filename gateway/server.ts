// The uWebSockets.js gateway: one handler per declared route (uWS matches
// the paths), each request run by route-runner.ts (admission → validation →
// billing → handler → answer), errors in one body (error-responder.ts), the
// pages, health endpoints and OpenAPI document beside the routes
// (unrouted.ts), and graceful shutdown.
import "./uws-settings.ts";
import * as uWS from "uWebSockets.js";
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from "uWebSockets.js";
import { TroupeError } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import { noMetrics, type Metrics } from "../core/metrics.ts";
import { noTracing, type Tracing } from "../core/tracing.ts";
import type { Admission } from "./admission.ts";
import { createErrorResponder } from "./error-responder.ts";
import { delivering, deferredWritesDone } from "../core/uws-delivery.ts";
import { captureRequest, readBody, ResponseState, type CapturedRequest } from "./http-io.ts";
import { listenExclusive } from "./exclusive-listen.ts";
import { buildOpenApi, type RawPath } from "./openapi.ts";
import { loadedPageState } from "./uws-error-pages.ts";
import { uriTooLong } from "./request-guards.ts";
import { paramNamesOf, type RouteDefinition, type WsRouteDefinition } from "./route.ts";
import { pickRequestId } from "./request-id.ts";
import { createRequestLog } from "./request-log.ts";
import { createRouteRunner, type RouteRunnerDeps } from "./route-runner.ts";
import { attachUnrouted, type PlainPage } from "./unrouted.ts";
import type { UnavailableCapability } from "../media/media-tools.ts";
import type { KeyRevocations } from "../tenancy/key-revocations.ts";
import type { WsRouteDeps } from "./ws-route.ts";

export type { PageAnswer, PageRequest, PlainPage } from "./unrouted.ts";

/** A WebSocket route: its declaration (documented, admitted by the gateway) and how it is served. */
export interface SocketRoute {
  route: WsRouteDefinition;
  attach(app: TemplatedApp, deps: WsRouteDeps & { revocations: KeyRevocations }): void;
}

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
  /** Listed by /readyz, which stays ready for the rest: what this server cannot do (no ffmpeg), and why. */
  unavailable?: readonly UnavailableCapability[];
  openApiInfo: { title: string; version: string };
  /** WebSocket routes (served by their modules, ws-route.ts; in the OpenAPI document) and the revocations that close their sockets. */
  sockets?: { routes: readonly SocketRoute[]; revocations: KeyRevocations };
  /** Paths whose handlers are attached to the app directly (files): for the document and the 405 answers. */
  rawPaths?: readonly RawPath[];
  /** Attach those handlers. */
  attachRaw?: readonly ((app: TemplatedApp) => void)[];
  /** Plain (non-/v1, undocumented) GET pages served like /healthz: the console, /docs. */
  pages?: readonly PlainPage[];
  /** Request metrics (one observation per request); default off. */
  metrics?: Metrics;
  /** A server span per request, continuing the caller's `traceparent`; default off. */
  tracing?: Tracing;
  /** Each routed request as it ended (the request log, route-runner.ts); default none. */
  callEnded?: RouteRunnerDeps["callEnded"];
  /** Whether a billed API-key call needs its cache control in its async context (route-runner.ts); default: every one. */
  usesCacheRequest?: RouteRunnerDeps["usesCacheRequest"];
}

export interface Gateway {
  /** Listens; /v1 requests get 503 (Retry-After 1) until open(): the features start between the two. */
  listen(host: string, port: number): Promise<number>;
  /** Starts serving /v1 (and /readyz may answer ready). */
  open(): void;
  /** Stops accepting, waits for in-flight requests (up to graceMs), then closes. */
  shutdown(graceMs: number): Promise<void>;
}

const bodyMethods = new Set(["post", "put", "patch"]);

export function createGateway(options: GatewayOptions): Gateway {
  const app = uWS.App();
  const { log } = options;
  const wsRoutes = (options.sockets?.routes ?? []).map((s) => s.route);
  let inflight = 0;
  let draining = false;
  // Until open(): listening (so the public URL is known) while the actor host and features start.
  let opened = false;
  let listenSocket: us_listen_socket | undefined;
  const drainWaiters: (() => void)[] = [];
  const metrics = options.metrics ?? noMetrics;
  const tracing = options.tracing ?? noTracing;
  // Built on first request, then cached: generating it (zod → JSON Schema for
  // every route) costs tens of milliseconds the start-up need not pay.
  let openApi: string | undefined;
  const openApiJson = (): string => (openApi ??= JSON.stringify(buildOpenApi(options.routes, options.openApiInfo, wsRoutes, options.rawPaths)));
  if (loadedPageState() !== "json") log.warn("uWS's own 400/431/505 answers are HTML, not the JSON error body: run `npm run patch:uws` (see README, HTTP limits)");

  const finished = (): void => {
    inflight -= 1;
    if (inflight === 0) for (const w of drainWaiters.splice(0)) w();
  };
  const errors = createErrorResponder(log);
  const { sendError, guard } = errors;
  const requestLog = createRequestLog(log);
  const serve = createRouteRunner({ admission: options.admission, requestLog, errors, metrics, secureCookies: options.secureCookies, finished, callEnded: options.callEnded, usesCacheRequest: options.usesCacheRequest });
  // Refused before the route runner (framing, URI length, not serving): its request line is written here instead.
  const refusedLine = (state: ResponseState, requestId: string, req: CapturedRequest, route: string, startedMs: number): void =>
    requestLog.write(state, { requestId, method: req.method, route, query: req.query, startedMs });

  // HEAD runs its GET's pipeline (RFC 9110 §9.3.2): the same status, headers and Content-Length, without the body (ResponseState.head).
  const registrations = options.routes.flatMap((route): { route: RouteDefinition; method: ServedMethod }[] =>
    route.method === "get" ? [{ route, method: "get" }, { route, method: "head" }] : [{ route, method: route.method }],
  );
  for (const { route, method } of registrations) {
    const paramNames = paramNamesOf(route.path);
    // A DELETE reads a body only when it declares one (deleting an organization carries its confirmation).
    const hasBody = bodyMethods.has(route.method) || (route.method === "delete" && route.body !== undefined);
    // A route's own limit can only lower MAX_BODY_BYTES.
    const maxBodyBytes = Math.min(route.maxBodyBytes ?? options.maxBodyBytes, options.maxBodyBytes);
    const recorder = metrics.enabled ? metrics.route(method, route.path) : undefined;
    const spanName = `${method.toUpperCase()} ${route.path}`;
    register(app, method, route.path, (res, req) => {
      delivering(res);
      const state = new ResponseState();
      state.head = method === "head";
      res.onAborted(() => state.markAborted());
      let requestId = "";
      try {
        const captured = captureRequest(req, paramNames.length);
        requestId = pickRequestId(captured.headers["x-request-id"]);
        if (captured.framing) {
          const at = performance.now();
          errors.refuseFraming(res, state, requestId, captured.framing, route.dialect, () => refusedLine(state, requestId, captured, route.path, at));
          return;
        }
        const tooLong = uriTooLong(captured.url, captured.query);
        if (tooLong) {
          sendError(res, state, requestId, tooLong, captured, false, route.dialect);
          refusedLine(state, requestId, captured, route.path, performance.now());
          return;
        }
        if (draining || !opened) {
          const message = draining ? "the server is shutting down" : "the server is starting";
          sendError(res, state, requestId, new TroupeError("service_unavailable", message, { retryAfterSeconds: 1 }), captured, false, route.dialect);
          refusedLine(state, requestId, captured, route.path, performance.now());
          return;
        }
        inflight += 1;
        const declared = captured.headers["content-length"];
        const body = hasBody ? readBody(res, state, declared === undefined ? undefined : Number(declared), maxBodyBytes, requestId, route.dialect) : undefined;
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

  attachUnrouted(app, {
    errors,
    requestLog,
    admission: options.admission,
    routes: options.routes,
    wsRoutes,
    rawPaths: options.rawPaths ?? [],
    pages: options.pages ?? [],
    ready: async () => opened && !draining && (await options.ready()),
    unavailable: options.unavailable ?? [],
    openApiJson,
  });
  // The WebSocket routes and the raw handlers go on the app here, so the gateway returned serves all it was given.
  if (options.sockets) {
    const deps = { admission: options.admission, log, revocations: options.sockets.revocations, metrics, callEnded: options.callEnded };
    for (const socket of options.sockets.routes) socket.attach(app, deps);
  }
  for (const attach of options.attachRaw ?? []) attach(app);

  return {
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
      // The last answers may wait for the loop's check phase (core/uws-delivery.ts).
      await deferredWritesDone();
      app.close();
    },
  };
}

/** A declared route's method, or HEAD, which every GET route also serves. */
type ServedMethod = RouteDefinition["method"] | "head";

function register(app: TemplatedApp, method: ServedMethod, path: string, handler: (res: HttpResponse, req: HttpRequest) => void): void {
  switch (method) {
    case "get":
      app.get(path, handler);
      return;
    case "head":
      app.head(path, handler);
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
