// OpenAPI 3.1 generated from the route definitions: the same zod schemas
// that validate requests describe them here, and every route's possible
// errors (its own plus those its credential kind implies) are listed.
import { z } from "zod";
import { errorCatalog, type ErrorCode } from "../core/errors.ts";
import { streamEventSchema } from "../providers/types.ts";
import type { RouteDefinition } from "./route.ts";

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

function toSchema(schema: z.ZodType, io: "input" | "output"): JsonObject {
  const json = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as JsonObject;
  delete json["$schema"];
  return json;
}

/**
 * One Server-Sent Event of a streamed chat (OpenAPI 3.1: `schema` of an event
 * stream describes each event): `data` is a JSON stream event, or the final
 * `[DONE]`.
 */
const sseEventSchema: JsonObject = {
  type: "object",
  required: ["data"],
  properties: {
    event: { type: "string" },
    data: {
      type: "string",
      if: { const: "[DONE]" },
      else: { contentMediaType: "application/json", contentSchema: toSchema(streamEventSchema, "output") },
    },
  },
  description: "Server-Sent Events: data lines carrying a delta, a tool call, the finish (or an error), then [DONE]; see the README",
};

function impliedErrors(route: RouteDefinition): ErrorCode[] {
  const codes: ErrorCode[] = ["internal_error"];
  if (route.body || route.query) codes.push("invalid_request");
  if (route.body) codes.push("payload_too_large", "unsupported_media_type");
  if (route.auth !== "none") codes.push("unauthorized", "forbidden");
  if (route.refusesApiKeys) codes.push("forbidden");
  if (route.auth === "api_key" || route.auth === "any") codes.push("rate_limited");
  if (route.scope) codes.push("insufficient_scope");
  return codes;
}

export function buildOpenApi(
  routes: RouteDefinition[],
  info: { title: string; version: string },
  extraPaths: Record<string, Record<string, unknown>> = {},
): JsonObject {
  const paths: Record<string, JsonObject> = {};
  for (const route of routes) {
    const path = route.path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, "{$1}");
    const parameters: JsonObject[] = [...route.path.matchAll(/:([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => ({
      name: m[1],
      in: "path",
      required: true,
      schema: { type: "string" },
    }));
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
      if (route.streams && Number(status) === 200) content["text/event-stream"] = { schema: sseEventSchema };
      responses[status] = Object.keys(content).length > 0 ? { description: "Success", content } : { description: "Success" };
    }
    const codes = new Set<ErrorCode>([...impliedErrors(route), ...(route.errors ?? [])]);
    const byStatus = new Map<number, ErrorCode[]>();
    for (const code of codes) {
      const status = errorCatalog[code].status;
      byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
    }
    for (const [status, list] of byStatus) {
      responses[String(status)] = {
        description: list.join(" | "),
        content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
      };
    }
    const operation: JsonObject = {
      operationId: `${route.method}${path.replace(/[{}]/g, "").replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ""))}`,
      summary: route.summary,
      tags: [route.tag],
      parameters,
      responses,
    };
    if (route.auth === "api_key") operation["security"] = [{ apiKey: [] }];
    else if (route.auth === "session") operation["security"] = [{ session: [] }, { sessionCookie: [] }];
    else if (route.auth === "any") operation["security"] = [{ apiKey: [] }, { session: [] }, { sessionCookie: [] }];
    else operation["security"] = [];
    if (route.scope) operation["x-troupe-scope"] = route.scope;
    if (route.body) {
      // The server reads an empty body as {} (server.ts), so the body is required exactly when {} is refused.
      const required = !route.body.safeParse({}).success;
      operation["requestBody"] = { required, content: { "application/json": { schema: toSchema(route.body, "input") } } };
    }
    paths[path] = { ...(paths[path] ?? {}), [route.method]: operation };
  }
  for (const [path, description] of [
    ["/healthz", "Liveness: 200 once the process serves."],
    ["/readyz", "Readiness: 200 when every backing service answers, 503 otherwise."],
    ["/v1/openapi.json", "This document."],
  ] as const) {
    paths[path] = { get: { operationId: `get${path.replace(/[^A-Za-z]/g, "")}`, summary: description, security: [], responses: { "200": { description } } } };
  }
  for (const [path, item] of Object.entries(extraPaths)) paths[path] = { ...(paths[path] ?? {}), ...item };
  return {
    openapi: "3.1.0",
    info: { title: info.title, version: info.version },
    paths,
    components: {
      schemas: { Error: errorBodySchema },
      securitySchemes: {
        apiKey: { type: "http", scheme: "bearer", description: "An API key: trp_live_… or trp_test_…" },
        session: { type: "http", scheme: "bearer", description: "A dashboard session token from /v1/auth/login" },
        sessionCookie: { type: "apiKey", in: "cookie", name: "troupe_session" },
      },
    },
  };
}
