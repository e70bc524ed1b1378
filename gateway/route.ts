// The route definition every /v1 endpoint is declared with. One value carries
// the method, path, credential kind, scope, zod schemas and handler; the
// server validates requests with the schemas and the OpenAPI document is
// generated from the same schemas, so the two cannot drift.
import type { z } from "zod";
import type { ErrorCode } from "../core/errors.ts";
import type { AuthContext } from "./auth-context.ts";

export const scopeValues = ["chat", "images", "vision", "audio", "video", "embeddings", "translation", "agents"] as const;
export type Scope = (typeof scopeValues)[number];

/**
 * none: public; session: dashboard session only (API keys refused with 403);
 * api_key: API key only (sessions refused with 403); any: either.
 */
export type AuthMode = "none" | "session" | "api_key" | "any";

export type HttpMethod = "get" | "post" | "put" | "patch" | "delete";

export interface SseWriter {
  /** Sends one `data:` event; resolves once the socket can take more (backpressure). */
  send(data: unknown): Promise<void>;
  /** Sends `data: [DONE]` and ends the response. */
  done(): void;
  /** True once the client went away or the stream ended. */
  readonly closed: boolean;
}

export interface CookieSpec {
  name: string;
  value: string;
  maxAgeSeconds: number;
  httpOnly: boolean;
}

export interface RouteContext<Body, Query> {
  requestId: string;
  params: Record<string, string>;
  body: Body;
  query: Query;
  headers: Readonly<Record<string, string>>;
  /** The peer address of the connection (the proxy's, behind one). */
  readonly remoteAddress: string;
  auth: AuthContext;
  /** Aborted when the client disconnects: pass it to every outbound call. */
  signal: AbortSignal;
  /** Switches the response to Server-Sent Events; the handler then returns `streamed`. */
  sse(): SseWriter;
  setCookie(cookie: CookieSpec): void;
}

export interface JsonResult {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export const streamed = Symbol("streamed");
export type RouteResult = JsonResult | typeof streamed;

export interface RouteDefinition<B extends z.ZodType = z.ZodType, Q extends z.ZodType = z.ZodType> {
  method: HttpMethod;
  /** uWS pattern, `:name` for parameters, e.g. `/v1/orgs/:org_id/projects`. */
  path: string;
  summary: string;
  tag: string;
  auth: AuthMode;
  /** Public routes that must still refuse an API key presented to them (login, signup). */
  refusesApiKeys?: boolean;
  /** For api_key routes: the category the key's scopes must include. */
  scope?: Scope;
  body?: B;
  query?: Q;
  /** Success responses for OpenAPI: status → schema (null for an empty body). */
  responses: Record<number, z.ZodType | null>;
  /** Error codes this route can answer besides the ones its auth mode implies. */
  errors?: ErrorCode[];
  /** Documents a text/event-stream alternative response. */
  streams?: boolean;
  handler: (ctx: RouteContext<z.output<B>, z.output<Q>>) => Promise<RouteResult>;
}

/** Declares a route with its body and query types inferred from the schemas. */
export function defineRoute<B extends z.ZodType = z.ZodUndefined, Q extends z.ZodType = z.ZodUndefined>(
  route: RouteDefinition<B, Q>,
): RouteDefinition {
  return route as unknown as RouteDefinition;
}

export function json(status: number, body?: unknown, headers?: Record<string, string>): JsonResult {
  return headers ? { status, body, headers } : { status, body };
}
