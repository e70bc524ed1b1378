// OpenAPI 3.1 generated from the route definitions: the same zod schemas
// that validate requests describe them here, and every route's possible
// errors (its own plus those its credential kind implies) are listed.
// WebSocket routes are documented from their declarations the same way, as
// a GET answering 101, with the close codes a refusal after the upgrade uses.
import { z } from "zod";
import { eventBodySchema, organizationEvents, webhookEventTypes } from "../actors/webhooks/events.ts";
import { errorCatalog, TroupeError, type ErrorCode } from "../core/errors.ts";
import { streamEventSchema } from "../providers/types.ts";
import { paramNamesOf, type RouteDefinition, type RouteDialect, type WsRouteDefinition } from "./route.ts";
import { wsCloseBase } from "./ws-close.ts";

type JsonObject = Record<string, unknown>;

const errorBodySchema: JsonObject = {
  type: "object",
  required: ["error"],
  properties: {
    error: {
      type: "object",
      required: ["code", "message", "request_id"],
      properties: {
        code: { type: "string", enum: Object.keys(errorCatalog) },
        message: { type: "string" },
        request_id: { type: "string" },
        details: {},
      },
    },
  },
};

// 431, 505 and the 400 for an unparseable request are written by uWS's
// parser from fixed bytes (scripts/patch-uws-errors.ts): no request id, and
// a message only where it fits.
const parserErrorBodySchema: JsonObject = {
  type: "object",
  required: ["error"],
  properties: {
    error: {
      type: "object",
      required: ["code"],
      properties: { code: { type: "string", enum: ["invalid_request", "headers_too_large", "http_version_not_supported"] }, message: { type: "string" } },
    },
  },
};

/** Errors any request can get from the HTTP layer, whatever its path. */
const httpLayerErrors: ErrorCode[] = ["method_not_allowed", "uri_too_long", "headers_too_large", "http_version_not_supported"];
const parserStatuses = new Set([431, 505]);

/**
 * Errors a route's dialect does not write: the 405 of the catch-all handler
 * and uWS's parser answers happen before any route is chosen.
 */
const outsideRoute = new Set<ErrorCode>(["method_not_allowed", "headers_too_large", "http_version_not_supported"]);

function errorResponses(codes: Iterable<ErrorCode>, dialect?: RouteDialect): JsonObject {
  const byStatus = new Map<number, ErrorCode[]>();
  const statusOf = (code: ErrorCode): number => (dialect && !outsideRoute.has(code) ? dialect.openApi.statusOf(code) : errorCatalog[code].status);
  for (const code of codes) {
    const status = statusOf(code);
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: JsonObject = {};
  for (const [status, list] of byStatus) {
    const dialectSchema = dialect && !list.some((code) => outsideRoute.has(code)) ? dialect.openApi.errorSchema().name : undefined;
    const schema = dialectSchema ?? (parserStatuses.has(status) ? "ParserError" : "Error");
    let description = list.join(" | ");
    if (status === 405) description += " (a method this path does not serve; the Allow header lists those it does)";
    if (status === 426) description += " (a plain GET on a WebSocket path, once its credential is admitted; the Upgrade header says websocket)";
    responses[String(status)] = { description, content: { "application/json": { schema: { $ref: `#/components/schemas/${schema}` } } } };
  }
  return responses;
}

function toSchema(schema: z.ZodType, io: "input" | "output"): JsonObject {
  const json = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as JsonObject;
  delete json["$schema"];
  return json;
}

/**
 * OpenAPI 3.1 `webhooks`: one entry per organization event type, from the
 * event catalogue (actors/webhooks/events.ts) — the signed POST a
 * subscribed URL receives, its body `{id, type, created_at, data}` with that
 * type's `data` schema.
 */
function webhooksSection(): JsonObject {
  const header = (name: string, description: string): JsonObject => ({ name, in: "header", required: true, schema: { type: "string" }, description });
  const headers = [
    header("X-Troupe-Signature", "hex HMAC-SHA256 of the raw body, keyed with the webhook's secret (whsec_…) as returned"),
    header("webhook-id", "the event id (the same on every retry)"),
    header("webhook-timestamp", "Unix seconds when this attempt was signed"),
    header("webhook-signature", "v1,<base64 HMAC-SHA256 of {id}.{timestamp}.{body}> (Standard Webhooks)"),
  ];
  const section: JsonObject = {};
  for (const type of webhookEventTypes) {
    const kind = organizationEvents[type];
    section[type] = {
      post: {
        operationId: `event${type.replace(/(^|\.)([a-z])/g, (_m, _dot: string, c: string) => c.toUpperCase())}`,
        summary: kind.summary,
        description: kind.subscribable ? `Sent to each active webhook subscribed to ${type}.` : "Not subscribable.",
        tags: ["webhooks"],
        parameters: headers,
        requestBody: { required: true, content: { "application/json": { schema: toSchema(eventBodySchema(type), "output") } } },
        responses: {
          "2XX": { description: "Received: any 2xx ends the delivery" },
          "410": { description: "Gone: the webhook is disabled and nothing more is sent" },
          default: { description: "Any other answer, or none within WEBHOOK_TIMEOUT_MS: the attempt failed and is retried on the schedule" },
        },
      },
    };
  }
  return section;
}

/**
 * One Server-Sent Event of a streamed chat (OpenAPI 3.1: `schema` of an event
 * stream describes each event): `data` is a JSON stream event, or the final
 * `[DONE]`. Built with the document (on its first request), not at import:
 * the start-up does not pay for the JSON Schema conversion.
 */
function sseEventSchema(event?: z.ZodType): JsonObject {
  return {
    type: "object",
    required: ["data"],
    properties: {
      event: { type: "string" },
      data: {
        type: "string",
        if: { const: "[DONE]" },
        else: { contentMediaType: "application/json", contentSchema: toSchema(event ?? streamEventSchema, "output") },
      },
    },
    description: event
      ? "Server-Sent Events: data lines carrying one JSON chunk each (or an error), then [DONE]"
      : "Server-Sent Events: data lines carrying a delta, a tool call, the finish (or an error), then [DONE]; see the README",
  };
}

/** What the error list and security of an operation depend on; HTTP and WebSocket routes both have it. */
type Admitted = Pick<RouteDefinition, "auth" | "refusesApiKeys" | "scope" | "body" | "query" | "errors" | "dialect">;

function impliedErrors(route: Admitted): ErrorCode[] {
  const codes: ErrorCode[] = ["internal_error", ...httpLayerErrors];
  if (route.body || route.query) codes.push("invalid_request");
  if (route.body) codes.push("payload_too_large", "unsupported_media_type");
  if (route.auth !== "none") codes.push("unauthorized", "forbidden");
  if (route.refusesApiKeys) codes.push("forbidden");
  if (route.auth === "api_key" || route.auth === "any") codes.push("rate_limited");
  if (route.scope) codes.push("insufficient_scope");
  return codes;
}

/** The error responses of a route: those its admission implies plus those it declares. */
function routeErrorResponses(route: Admitted, extra: ErrorCode[] = []): JsonObject {
  return errorResponses(new Set<ErrorCode>([...impliedErrors(route), ...(route.errors ?? []), ...extra]), route.dialect);
}

function security(route: Admitted): JsonObject[] {
  if (route.dialect) return route.dialect.openApi.security;
  if (route.auth === "api_key") return [{ apiKey: [] }];
  if (route.auth === "session") return [{ session: [] }, { sessionCookie: [] }];
  if (route.auth === "any") return [{ apiKey: [] }, { session: [] }, { sessionCookie: [] }];
  return [];
}

function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, "{$1}");
}

function pathParameters(path: string): JsonObject[] {
  return paramNamesOf(path).map((name) => ({ name, in: "path", required: true, schema: { type: "string" } }));
}

function operationId(method: string, path: string): string {
  return `${method}${path.replace(/[{}]/g, "").replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ""))}`;
}

/**
 * A WebSocket route: a GET answering 101. What admission refuses in uWS's
 * upgrade callback is an HTTP answer; what needs I/O first (a cold key, a
 * rate limit or budget counted elsewhere) is refused once the socket is
 * open, as is whatever `accept` refuses (the route's own `errors`): those
 * are close codes, 4000 + the status (ws-close.ts), listed in
 * `x-troupe-websocket.close_codes`.
 */
function wsOperation(route: WsRouteDefinition): JsonObject {
  const billed: ErrorCode[] = route.billing ? ["budget_exceeded"] : [];
  const admission = { ...route, errors: billed };
  const refusals: ErrorCode[] = [...impliedErrors(admission), "invalid_request", ...billed, ...(route.errors ?? [])];
  const closing = new Set(refusals.filter((code) => !httpLayerErrors.includes(code)));
  const closeCodes: Record<string, string> = {};
  for (const code of closing) {
    const close = String(wsCloseBase + errorCatalog[code].status);
    closeCodes[close] = closeCodes[close] ? `${closeCodes[close]} | ${code}` : code;
  }
  const operation: JsonObject = {
    operationId: operationId("get", openApiPath(route.path)),
    summary: route.summary,
    tags: [route.tag],
    parameters: pathParameters(route.path),
    responses: { "101": { description: "Switching protocols to WebSocket" }, ...routeErrorResponses(admission, ["upgrade_required", "invalid_request"]) },
    security: security(route),
    "x-troupe-websocket": { ...(route.subprotocol ? { subprotocol: route.subprotocol } : {}), close_codes: Object.fromEntries(Object.entries(closeCodes).sort(([a], [b]) => Number(a) - Number(b))) },
  };
  if (route.scope) operation["x-troupe-scope"] = route.scope;
  return operation;
}

/**
 * A path served by a handler attached to the uWS app directly (binary
 * bodies, e.g. /v1/files/{id}): its operations as written by its module; the
 * document adds the operation ids and the HTTP layer's errors.
 */
export interface RawPath {
  /** uWS pattern, e.g. /v1/files/:id. */
  path: string;
  operations: Partial<Record<"get" | "head", JsonObject & { responses: JsonObject }>>;
}

export function buildOpenApi(
  routes: RouteDefinition[],
  info: { title: string; version: string },
  wsRoutes: readonly WsRouteDefinition[] = [],
  rawPaths: readonly RawPath[] = [],
): JsonObject {
  const paths: Record<string, JsonObject> = {};
  // Compatibility mounts add their error body and credential scheme.
  const dialectSchemas: JsonObject = {};
  const dialectSchemes: JsonObject = {};
  for (const route of routes) {
    if (route.dialect) {
      const { name, schema } = route.dialect.openApi.errorSchema();
      dialectSchemas[name] = schema;
      Object.assign(dialectSchemes, route.dialect.openApi.securitySchemes);
    }
    const path = openApiPath(route.path);
    const parameters: JsonObject[] = pathParameters(route.path);
    if (route.query) {
      const q = toSchema(route.query, "input");
      const props = (q["properties"] ?? {}) as Record<string, JsonObject>;
      const required = new Set((q["required"] as string[] | undefined) ?? []);
      for (const [name, schema] of Object.entries(props)) parameters.push({ name, in: "query", required: required.has(name), schema });
    }
    const responses: JsonObject = {};
    for (const [status, schema] of Object.entries(route.responses)) {
      const content: JsonObject = {};
      if (schema) content["application/json"] = { schema: toSchema(schema, "output") };
      if (route.produces && Number(status) === 200) for (const type of route.produces) content[type] = { schema: { type: "string", contentMediaType: type } };
      if (route.streams && Number(status) === 200) content["text/event-stream"] = { schema: route.dialect?.openApi.eventStream?.() ?? sseEventSchema(route.streams === true ? undefined : route.streams) };
      responses[status] = Object.keys(content).length > 0 ? { description: "Success", content } : { description: "Success" };
    }
    Object.assign(responses, routeErrorResponses(route));
    const operation: JsonObject = {
      operationId: operationId(route.method, path),
      summary: route.summary,
      tags: [route.tag],
      parameters,
      responses,
      security: security(route),
    };
    if (route.scope) operation["x-troupe-scope"] = route.scope;
    if (route.body) {
      // The server reads an empty body as {} (server.ts), so the body is required exactly when {} is refused.
      const required = !route.body.safeParse({}).success;
      const mediaTypes = route.bodyType === "multipart" ? ["multipart/form-data"] : route.bodyType === "json-or-multipart" ? ["application/json", "multipart/form-data"] : ["application/json"];
      const schema = toSchema(route.body, "input");
      operation["requestBody"] = { required, content: Object.fromEntries(mediaTypes.map((type) => [type, { schema }])) };
    }
    paths[path] = { ...(paths[path] ?? {}), [route.method]: operation };
  }
  for (const [path, description] of [
    ["/healthz", "Liveness: 200 once the process serves."],
    ["/readyz", "Readiness: 200 when every backing service answers, 503 otherwise."],
    ["/v1/openapi.json", "This document."],
  ] as const) {
    const operation = (method: string) => ({
      operationId: `${method}${path.replace(/[^A-Za-z]/g, "")}`,
      summary: method === "head" ? `${description} Headers only.` : description,
      security: [],
      responses: { "200": { description }, ...(path === "/readyz" ? { "503": { description: "not ready" } } : {}), ...errorResponses(["internal_error", ...httpLayerErrors]) },
    });
    paths[path] = { get: operation("get"), head: operation("head") };
  }
  for (const route of wsRoutes) {
    const path = openApiPath(route.path);
    paths[path] = { ...(paths[path] ?? {}), get: wsOperation(route) };
  }
  for (const raw of rawPaths) {
    const path = openApiPath(raw.path);
    const item: JsonObject = { ...(paths[path] ?? {}) };
    for (const [method, operation] of Object.entries(raw.operations)) {
      item[method] = { operationId: operationId(method, path), ...operation, responses: { ...errorResponses(["internal_error", ...httpLayerErrors]), ...operation.responses } };
    }
    paths[path] = item;
  }
  return {
    openapi: "3.1.0",
    info: { title: info.title, version: info.version },
    paths,
    webhooks: webhooksSection(),
    components: {
      schemas: { Error: errorBodySchema, ParserError: parserErrorBodySchema, ...dialectSchemas },
      securitySchemes: {
        apiKey: { type: "http", scheme: "bearer", description: "An API key: trp_live_… or trp_test_…" },
        session: { type: "http", scheme: "bearer", description: "A dashboard session token from /v1/auth/login" },
        sessionCookie: { type: "apiKey", in: "cookie", name: "troupe_session" },
        ...dialectSchemes,
      },
    },
  };
}
