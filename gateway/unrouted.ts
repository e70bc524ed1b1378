// What the gateway serves besides the declared routes: plain GET/HEAD pages
// (the console, /docs), /healthz, /readyz and the OpenAPI document, and the
// answer to everything no route took: 426 on a WebSocket path without an
// upgrade, 405 when the path exists under another method, else 404. Under a
// compatible mount's prefix these answers are in that mount's error shape
// (mountDialects: one entry per mount), so an SDK pointed at the mount reads
// a missing endpoint as one, and GET or HEAD on a mount's root answers 200 with no
// body (the preflight Claude Code sends to its base URL).
import type { HttpRequest, HttpResponse, TemplatedApp } from "uWebSockets.js";
import { errorBody, TroupeError } from "../core/errors.ts";
import { delivering } from "../core/uws-delivery.ts";
import type { Admission } from "./admission.ts";
import type { ErrorResponder } from "./error-responder.ts";
import { bodyFraming, ResponseState, writeResponse } from "./http-io.ts";
import type { RawPath } from "./openapi.ts";
import { uriTooLong } from "./request-guards.ts";
import { pickRequestId } from "./request-id.ts";
import type { RequestEntry, RequestLog } from "./request-log.ts";
import type { RouteDefinition, RouteDialect, WsRouteDefinition } from "./route.ts";
import { anthropicDialect } from "./compat/anthropic/errors.ts";
import { geminiDialect } from "./compat/gemini/errors.ts";
import { openAiDialect, type OpenAiErrorDetails } from "./compat/openai/errors.ts";
import type { UnavailableCapability } from "../media/media-tools.ts";

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

/** A compatible mount's error shape for what no route of it took; `unknownUrl` is its 404. */
export interface MountDialect {
  /** The mount's root path, no trailing slash: "/openai/v1". */
  prefix: string;
  dialect: RouteDialect;
  unknownUrl(method: string, url: string): TroupeError;
}

/**
 * The mounts, by prefix. A new mount plugs in by one entry (its dialect and
 * its 404's wording). The 404 says the endpoint does not exist, never a
 * model: a client reading "not found" must look at its URL.
 */
export const mountDialects: readonly MountDialect[] = [
  {
    prefix: "/openai/v1",
    dialect: openAiDialect,
    unknownUrl: (method, url) => {
      const details: OpenAiErrorDetails = { openai_code: "unknown_url" };
      return new TroupeError("not_found", `Unknown request URL: ${method} ${url}. Please check the URL for typos (docs/guides/openai-compatible.md lists the endpoints)`, { details });
    },
  },
  {
    prefix: "/anthropic",
    dialect: anthropicDialect,
    unknownUrl: (method, url) => new TroupeError("not_found", `Unknown request URL: ${method} ${url} (docs/guides/anthropic-compatible.md lists the endpoints)`),
  },
  {
    prefix: "/gemini",
    dialect: geminiDialect,
    unknownUrl: (method, url) => new TroupeError("not_found", `Unknown request URL: ${method} ${url} (docs/guides/gemini.md lists the endpoints)`),
  },
];

/** The mount a path is under, if any. */
export function mountOf(url: string): MountDialect | undefined {
  return mountDialects.find((m) => url === m.prefix || url.startsWith(`${m.prefix}/`));
}

export interface UnroutedDeps {
  errors: ErrorResponder;
  requestLog: RequestLog;
  admission: Admission;
  routes: readonly RouteDefinition[];
  wsRoutes: readonly WsRouteDefinition[];
  rawPaths: readonly RawPath[];
  pages: readonly PlainPage[];
  /** /readyz: true while serving with every backing service usable. */
  ready(): Promise<boolean>;
  /** /readyz lists these whatever its status: capabilities this server lacks (no ffmpeg) do not make it unready for the rest. */
  unavailable: readonly UnavailableCapability[];
  openApiJson(): string;
}

export function attachUnrouted(app: TemplatedApp, deps: UnroutedDeps): void {
  const { errors, requestLog } = deps;

  /**
   * Refuses ambiguous framing and over-long URLs for the handlers below,
   * which do not go through captureRequest. True when the request may go on;
   * else `answered` runs once the refusal is written.
   */
  const admitted = (res: HttpResponse, req: HttpRequest, state: ResponseState, requestId: string, answered: () => void, dialect?: RouteDialect): boolean => {
    const framing = bodyFraming(req);
    if (framing) {
      errors.refuseFraming(res, state, requestId, framing, dialect, answered);
      return false;
    }
    const tooLong = uriTooLong(req.getUrl(), req.getQuery() ?? "");
    if (tooLong) {
      errors.sendError(res, state, requestId, tooLong, undefined, false, dialect);
      answered();
    }
    return tooLong === undefined;
  };
  const startedMs = (): number => (requestLog.enabled ? performance.now() : 0);

  // GET and HEAD (the same headers and Content-Length, no body: load balancers probe with HEAD).
  const plain = (path: string, respond: (req: HttpRequest) => Promise<PageAnswer>) => {
    const handler = (head: boolean) => (res: HttpResponse, req: HttpRequest) => {
      delivering(res);
      const requestId = pickRequestId(req.getHeader("x-request-id"));
      const state = new ResponseState();
      state.head = head;
      res.onAborted(() => state.markAborted());
      const line: RequestEntry = { requestId, method: head ? "HEAD" : "GET", route: path, query: req.getQuery() ?? "", startedMs: startedMs() };
      const answered = (): void => requestLog.write(state, line);
      if (!admitted(res, req, state, requestId, answered)) return;
      respond(req)
        .then((answer) => {
          const out: [string, string][] = [["content-type", answer.contentType], ["x-request-id", requestId], ...(answer.headers ?? [])];
          writeResponse(res, state, answer.status, out, answer.body);
        })
        .catch((error: unknown) => errors.sendError(res, state, requestId, error))
        .catch((error: unknown) => errors.guard(res, state, requestId, error))
        .then(answered);
    };
    app.get(path, handler(false));
    app.head(path, handler(true));
  };
  const jsonAnswer = (status: number, body: string): PageAnswer => ({ status, contentType: "application/json", body });

  for (const page of deps.pages) {
    plain(page.path, (req) => {
      // Copied before the page's first await: uWS invalidates `req` then.
      const headers: Record<string, string> = {};
      req.forEach((name, value) => {
        headers[name] = value;
      });
      return page.respond({ url: req.getUrl(), query: req.getQuery() ?? "", headers });
    });
  }
  const plainPaths = ["/healthz", "/readyz", "/v1/openapi.json", ...deps.pages.map((p) => p.path)];
  plain("/healthz", async () => jsonAnswer(200, '{"status":"ok"}'));
  plain("/readyz", async () => {
    const ok = await deps.ready().catch(() => false);
    return jsonAnswer(ok ? 200 : 503, JSON.stringify({ status: ok ? "ready" : "not_ready", unavailable: deps.unavailable }));
  });
  plain("/v1/openapi.json", async () => jsonAnswer(200, deps.openApiJson()));

  // Runs only for requests no route took, so the pattern scan costs nothing on the served paths.
  const toRegex = (path: string) => new RegExp("^" + path.replace(/:[^/]+/g, "[^/]+") + "/?$");
  // A GET route serves HEAD too (server.ts).
  const patterns = [
    ...deps.routes.flatMap((r) => (r.method === "get" ? ["GET", "HEAD"] : [r.method.toUpperCase()]).map((method) => ({ method, path: r.path, regex: toRegex(r.path) }))),
    ...plainPaths.flatMap((path) => ["GET", "HEAD"].map((method) => ({ method, path, regex: toRegex(path) }))),
    ...deps.rawPaths.flatMap((raw) => Object.keys(raw.operations).map((method) => ({ method: method.toUpperCase(), path: raw.path, regex: toRegex(raw.path) }))),
  ];
  const upgradeOnly = deps.wsRoutes.map((route) => ({ route, regex: toRegex(route.path) }));
  app.any("/*", (res, req) => {
    delivering(res);
    const requestId = pickRequestId(req.getHeader("x-request-id"));
    const state = new ResponseState();
    res.onAborted(() => state.markAborted());
    const requested = req.getCaseSensitiveMethod().toUpperCase();
    const url = req.getUrl();
    // No route took it: the concrete path is logged unless a template is found below (405, 426).
    const line: RequestEntry = { requestId, method: requested, route: null, path: url, query: req.getQuery() ?? "", startedMs: startedMs() };
    const answered = (): void => requestLog.write(state, line);
    const asRoute = (path: string): void => {
      line.route = path;
      delete line.path;
    };
    const mount = mountOf(url);
    const dialect = mount?.dialect;
    try {
      state.head = requested === "HEAD";
      if (!admitted(res, req, state, requestId, answered, dialect)) return;
      if (mount && (requested === "GET" || state.head) && (url === mount.prefix || url === `${mount.prefix}/`)) {
        // A client's preflight of its base URL: reachable, nothing to read (GET alike, so HEAD answers as GET does).
        asRoute(mount.prefix);
        writeResponse(res, state, 200, [["x-request-id", requestId]], "");
        answered();
        return;
      }
      // A HEAD gets the GET's answer without its body; rendered as the GET's, so its Content-Length is the GET's.
      const method = state.head ? "GET" : requested;
      const headers: [string, string][] = [["content-type", "application/json"], ["x-request-id", requestId]];
      const ws = upgradeOnly.find((w) => w.regex.test(url));
      if (ws) asRoute(ws.route.path);
      if (ws && method !== "GET") {
        headers.push(["allow", "GET"]);
        // The header rides on the error too: a mount's dialect renders the error with its own headers.
        const error = new TroupeError("method_not_allowed", `${method} is not allowed on ${url}; allowed: GET (WebSocket upgrade)`, { headers: [["allow", "GET"]] });
        if (dialect) errors.sendError(res, state, requestId, error, undefined, false, dialect);
        else writeResponse(res, state, error.status, headers, JSON.stringify(errorBody(error, requestId)));
        answered();
        return;
      }
      if (ws) {
        // Credentials first, as on every route (and as the document's security says): a plain GET
        // without a valid credential is 401/403/429, and only an admitted one learns it must upgrade.
        const copied: Record<string, string> = {};
        req.forEach((name, value) => (copied[name] = value));
        Promise.resolve()
          .then(() => deps.admission.admit(ws.route, "GET", copied))
          .then(() => {
            headers.push(["upgrade", "websocket"], ["connection", "Upgrade"]);
            const error = new TroupeError("upgrade_required", `${url} serves WebSocket upgrades only: send Upgrade: websocket`);
            writeResponse(res, state, error.status, headers, JSON.stringify(errorBody(error, requestId)));
          })
          .catch((error: unknown) => errors.sendError(res, state, requestId, error))
          .catch((error: unknown) => errors.guard(res, state, requestId, error))
          .then(answered);
        return;
      }
      const candidates = patterns.filter((p) => p.regex.test(url));
      // A path written out (POST /openai/v1/responses/input_tokens) is its own resource, not an id of its templated neighbour's.
      const literal = candidates.filter((p) => !p.path.includes(":") && (url === p.path || url === `${p.path}/`));
      const matching = literal.length > 0 ? literal : candidates;
      const known = matching[0];
      if (known && !matching.some((p) => p.method === method)) {
        asRoute(known.path);
        const allowed = matching.map((p) => p.method).join(", ");
        const error = new TroupeError("method_not_allowed", `${method} is not allowed on ${url}; allowed: ${allowed}`, { headers: [["allow", allowed]] });
        if (dialect) {
          errors.sendError(res, state, requestId, error, undefined, false, dialect);
        } else {
          headers.push(["allow", allowed]);
          writeResponse(res, state, 405, headers, JSON.stringify(errorBody(error, requestId)));
        }
        answered();
        return;
      }
      errors.sendError(res, state, requestId, mount ? mount.unknownUrl(method, url) : new TroupeError("not_found", `no route for ${method} ${url}`), undefined, false, dialect);
      answered();
    } catch (error) {
      errors.guard(res, state, requestId, error);
      answered();
    }
  });
}
