// The route definition every /v1 endpoint is declared with. One value carries
// the method, path, credential kind, scope, zod schemas and handler; the
// server validates requests with the schemas and the OpenAPI document is
// generated from the same schemas, so the two cannot drift. The handler's
// types come from the declaration too: `ctx.params` has
// exactly the path's `:name` keys (as Hono's `ParamKeys<Path>`) and
// `ctx.auth` is the credential kind the auth mode admits, so a handler never
// re-checks either. How a route is billed is declared too (`billing`,
// route-billing.ts): the server admits against the budget before the handler
// and settles or releases after it, so the handler is the call itself.
// WebSocket endpoints are declared the same way (`defineWsRoute`).
import type { z } from "zod";
import type { ErrorCode, TroupeError } from "../core/errors.ts";
import type { UsageFigures } from "../providers/usage.ts";
import type { AuthFor } from "./admission.ts";
import type { HeldReservation, RouteBilling, UnderLimit } from "./route-billing.ts";

export const scopeValues = ["chat", "images", "vision", "audio", "video", "embeddings", "translation", "agents"] as const;
export type Scope = (typeof scopeValues)[number];

/**
 * none: public; session: dashboard session only (API keys refused with 403);
 * api_key: API key only (sessions refused with 403); any: either.
 */
export type AuthMode = "none" | "session" | "api_key" | "any";

export type HttpMethod = "get" | "post" | "put" | "patch" | "delete";

/** How a streamed response frames its events: `data:` lines, or the elements of one JSON array. */
export type StreamFraming = "sse" | "json-array";

export interface SseWriter {
  /** Sends one `data:` event (after an `event:` line when named); resolves once the socket can take more (backpressure). */
  send(data: unknown, event?: string): Promise<void>;
  /** Sends `data: [DONE]` and ends the response. */
  done(): void;
  /** Ends the response without `[DONE]` (Anthropic's streams end with their last named event). */
  end(): void;
  /** True once the client went away or the stream ended. */
  readonly closed: boolean;
}

export interface CookieSpec {
  name: string;
  value: string;
  maxAgeSeconds: number;
  httpOnly: boolean;
}

/** The `:name` parameters of a path: `/v1/orgs/:org_id/projects` → "org_id". */
export type ParamKeys<Path extends string> = Path extends `${string}:${infer Rest}`
  ? Rest extends `${infer Name}/${infer Tail}`
    ? Name | ParamKeys<Tail>
    : Rest
  : never;

/** The same names at run time, in path order (uWS hands parameters over by index). */
export function paramNamesOf(path: string): string[] {
  return [...path.matchAll(/:([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1] ?? "");
}

/** A path's parameters, each present (uWS only matches a path with all its segments). */
export type PathParams<Path extends string> = { readonly [K in ParamKeys<Path>]: string };

export interface RouteContext<Body, Query, Path extends string = string, A extends AuthMode = AuthMode> {
  requestId: string;
  params: PathParams<Path>;
  body: Body;
  query: Query;
  headers: Readonly<Record<string, string>>;
  /** The peer address of the connection (the proxy's, behind one). */
  readonly remoteAddress: string;
  auth: AuthFor<A>;
  /** Aborted when the client disconnects: pass it to every outbound call. */
  signal: AbortSignal;
  /**
   * Switches the response to Server-Sent Events (with `headers` besides the
   * usual ones); the handler then returns `streamed`. `json-array` frames the
   * same events as the elements of one streamed JSON array instead (Gemini's
   * streamGenerateContent without alt=sse).
   */
  sse(headers?: readonly [string, string][], framing?: StreamFraming): SseWriter;
  setCookie(cookie: CookieSpec): void;
  /**
   * Reports the call's figures on a route whose `billing` is a reserved call:
   * settles its reservation at the real cost (await it before the answer, or
   * before a stream's last event, so the next call sees it spent) or records
   * the call. Once per request; on other routes it throws.
   */
  bill(figures: UsageFigures): void | Promise<void>;
}

export interface JsonResult {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export const streamed = Symbol("streamed");

/** A non-JSON body (the OpenAI-compatible mount's speech audio). */
export interface BinaryResult {
  status: number;
  bytes: Buffer;
  contentType: string;
}

/** A JSON body already serialized (an actor's output through callActorJson): written as it is. */
export interface JsonTextResult {
  status: number;
  jsonText: string;
}

export type RouteResult = JsonResult | JsonTextResult | BinaryResult | typeof streamed;

/** An error as a dialect answers it: status, JSON body, headers besides content-type and x-request-id. */
export interface ErrorAnswer {
  status: number;
  body: unknown;
  headers?: [string, string][];
}

/**
 * How a compatibility mount (/anthropic/v1) answers errors: in its own body
 * shape and statuses instead of Troupe's. The same errors are raised (one
 * registry); only their rendering differs. /v1 routes have no dialect.
 */
export interface RouteDialect {
  renderError(error: TroupeError, requestId: string): ErrorAnswer;
  /** The key's rate-limit headers under the dialect's names too (OpenAI's x-ratelimit-*-requests); absent: Troupe's only. */
  rateLimitHeaders?(headers: [string, string][]): [string, string][];
  /** How the OpenAPI document describes this dialect's errors and credential. */
  openApi: {
    /** components.schemas name and schema of the error body (built with the document, not at start). */
    errorSchema(): { name: string; schema: Record<string, unknown> };
    /** The status an error code is answered with (OpenAPI groups the codes by it). */
    statusOf(code: ErrorCode): number;
    /** Security requirements of the operations, and the schemes they name beyond Troupe's own. */
    security: Record<string, string[]>[];
    securitySchemes: Record<string, Record<string, unknown>>;
    /** The text/event-stream event schema of a streaming route. */
    eventStream?: () => Record<string, unknown>;
  };
}

export interface RouteDefinition<B extends z.ZodType = z.ZodType, Q extends z.ZodType = z.ZodType, P extends string = string, A extends AuthMode = AuthMode> {
  method: HttpMethod;
  /** uWS pattern, `:name` for parameters, e.g. `/v1/orgs/:org_id/projects`. */
  path: P;
  summary: string;
  tag: string;
  auth: A;
  /** Public routes that must still refuse an API key presented to them (login, signup). */
  refusesApiKeys?: boolean;
  /** For api_key routes: the category the key's scopes must include; "all": every category (only an unscoped key). */
  scope?: Scope | "all";
  /**
   * For api_key routes: a scope the parsed body needs besides `scope`, or
   * undefined when it needs none. Image input needs "vision" on whichever
   * door it comes through, as /v1/vision/analyze declares it; checked by
   * admission.ts once the body is parsed, before billing and any provider call.
   */
  inputScope?: (body: z.output<B>) => Scope | undefined;
  /** A header that may carry the API key instead of Authorization: Bearer (Anthropic's x-api-key). */
  apiKeyHeader?: string;
  /** A query parameter that may carry the API key too (Google's `?key=`); its value is redacted from the request log (request-log.ts). */
  apiKeyQuery?: string;
  /** Errors in another API's shape (a compatibility mount); absent: Troupe's. */
  dialect?: RouteDialect;
  body?: B;
  /**
   * A hand-written check of the body's common form, tried before `body`: its
   * parsed value, or undefined to let the schema parse (and word the 400s).
   * It must answer exactly what the schema would (chat-body.ts).
   */
  fastBody?: (value: unknown) => z.output<B> | undefined;
  query?: Q;
  /** Success responses for OpenAPI: status → schema (null for an empty body). */
  responses: Record<number, z.ZodType | null>;
  /** Error codes this route can answer besides the ones its auth mode implies. */
  errors?: ErrorCode[];
  /**
   * How the body is encoded: JSON (the default), multipart/form-data
   * (gateway/validation.ts parseMultipartBody), or either, by its
   * Content-Type (OpenAI's video create: the SDKs send multipart, curl users JSON).
   */
  bodyType?: "json" | "multipart" | "json-or-multipart";
  /**
   * A smaller body limit than MAX_BODY_BYTES, for routes whose valid bodies
   * are small (login, signup, account forms): 413 past it, on the declared
   * Content-Length or while the body streams in, before anything is parsed.
   */
  maxBodyBytes?: number;
  /** Media types of a binary success answer (BinaryResult), for the document. */
  produces?: readonly string[];
  /** Documents a text/event-stream alternative response (the schema of one event's JSON, when not Troupe's stream event). */
  streams?: boolean | z.ZodType;
  /** How the route is billed (route-billing.ts): admitted before the handler, settled or released after it; absent: not billed. */
  billing?: RouteBilling<RouteContext<z.output<B>, z.output<Q>, P, A>>;
  handler: (ctx: RouteContext<z.output<B>, z.output<Q>, P, A>) => Promise<RouteResult>;
}

/**
 * Declares a route: body and query types inferred from the schemas, params
 * from the path literal, the credential from the auth mode. The server holds
 * routes with these types erased.
 */
export function defineRoute<B extends z.ZodType = z.ZodUndefined, Q extends z.ZodType = z.ZodUndefined, const P extends string = string, A extends AuthMode = AuthMode>(
  route: RouteDefinition<B, Q, P, A>,
): RouteDefinition {
  return route as unknown as RouteDefinition;
}

/** What the routes of one area declare alike: document tag, credential kind, scope, the errors they all answer… */
export type RouteGroupFields = Partial<Omit<RouteDefinition, "method" | "path" | "summary" | "body" | "query" | "responses" | "billing" | "handler">> & { tag: string; auth: AuthMode };

/**
 * States once what a file's routes share, and gives each route its method and
 * path on one line, as the server matches them (Hono's `app.get(path)`):
 * `const videoRoute = routeGroup({ tag: "video", auth: "api_key", scope: "video" })`,
 * then `defineRoute({ ...videoRoute("get", "/v1/jobs/:id"), summary, … })`.
 * The path stays a literal type, so `ctx.params` is still typed from it.
 */
export function routeGroup<const G extends RouteGroupFields>(shared: G) {
  return <const M extends HttpMethod, const P extends string>(method: M, path: P) => ({ ...shared, method, path });
}

/** What a WebSocket route's `accept` sees: the admitted upgrade request, its socket already open. */
export interface WsUpgradeContext<Path extends string = string, A extends AuthMode = AuthMode> {
  requestId: string;
  params: PathParams<Path>;
  headers: Readonly<Record<string, string>>;
  auth: AuthFor<A>;
  /** Aborted once the socket closes (the client went away, or it was refused). */
  signal: AbortSignal;
}

/**
 * A WebSocket endpoint (`GET` + Upgrade), declared like an HTTP route: the
 * same admission runs on the upgrade request and the OpenAPI entry is
 * generated from this declaration. The upgrade never waits (ws-route.ts):
 * what admission decides without I/O is refused with an HTTP answer, the
 * rest — and `accept` — once the socket is open, with close code 4000 +
 * the status (ws-close.ts).
 */
export interface WsRouteDefinition<P extends string = string, A extends AuthMode = AuthMode, Data = unknown> {
  kind: "ws";
  path: P;
  summary: string;
  tag: string;
  auth: A;
  scope?: Scope;
  /** Error codes `accept` can close the socket with (4000 + their status) besides the ones its auth mode implies. */
  errors?: ErrorCode[];
  /** The subprotocol the server selects when the client offers it. */
  subprotocol?: string;
  /** How opening the socket is billed (admitted before `accept`, released after it); absent: not billed. */
  billing?: UnderLimit<WsUpgradeContext<P, A>> | HeldReservation<WsUpgradeContext<P, A>>;
  /** Runs after admission, once the socket is open; its answer becomes the socket's data. Throw a TroupeError to close it (4000 + its status). */
  accept(ctx: WsUpgradeContext<P, A>): Promise<Data>;
}

/** Declares a WebSocket route with params and credential typed as for `defineRoute`. */
export function defineWsRoute<const P extends string, A extends AuthMode, Data>(route: WsRouteDefinition<P, A, Data>): WsRouteDefinition<P, A, Data> {
  return route;
}

export function json(status: number, body?: unknown, headers?: Record<string, string>): JsonResult {
  return headers ? { status, body, headers } : { status, body };
}

/** Answers JSON text as it is: the route's declared response schema describes it, as for `json`. */
export function jsonText(status: number, text: string): JsonTextResult {
  return { status, jsonText: text };
}

export function binary(status: number, bytes: Buffer, contentType: string): BinaryResult {
  return { status, bytes, contentType };
}
