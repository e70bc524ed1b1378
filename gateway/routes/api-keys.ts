// API key management (docs/api/keys.md): session only, owners and admins write.
import { z } from "zod";
import type { ApiKeyService } from "../../tenancy/api-keys.ts";
import { formBodyMaxBytes } from "../body-limits.ts";
import { defineRoute, json, routeGroup } from "../route.ts";
import { usageToDateSchema, withUsageToDate, type ReadUsageToDate } from "../usage-to-date.ts";
import { apiKeyRecordSchema, name, newApiKeySchema, pagedList, scopeList } from "../schemas.ts";

const createKeyBody = z
  .object({
    name,
    scopes: scopeList.default([]),
    live: z.boolean().default(false),
    rate_limit_per_minute: z.number().int().min(1).max(10_000_000).optional(),
    token_limit_per_minute: z.number().int().min(1).max(1_000_000_000).optional().describe("input + output tokens per minute; default: no token limit"),
  })
  .strict();

/** What every key route declares: its document tag, a session, a form's body limit, and the 404 of an environment or key the user may not manage. */
const keyRoute = routeGroup({ tag: "api-keys", auth: "session", maxBodyBytes: formBodyMaxBytes, errors: ["not_found"] });

/** `usageToDate` adds each key's usage to date to the list (absent: zeros). */
export function apiKeyRoutes(apiKeys: ApiKeyService, usageToDate?: ReadUsageToDate) {
  return [
    defineRoute({
      ...keyRoute("post", "/v1/environments/:environment_id/api-keys"),
      summary: "Create an API key; the full key is returned only now",
      body: createKeyBody,
      responses: { 201: newApiKeySchema },
      handler: async (ctx) => json(201, await apiKeys.create(ctx.auth.userId, ctx.params.environment_id, ctx.body)),
    }),
    defineRoute({
      ...keyRoute("get", "/v1/environments/:environment_id/api-keys"),
      summary: "The keys of an environment (never the keys themselves)",
      ...pagedList(apiKeyRecordSchema.extend({ usage: usageToDateSchema })),
      handler: async (ctx) => json(200, await withUsageToDate(await apiKeys.list(ctx.auth.userId, ctx.params.environment_id, ctx.query.limit, ctx.query.cursor), usageToDate)),
    }),
    defineRoute({
      ...keyRoute("delete", "/v1/api-keys/:api_key_id"),
      summary: "Revoke a key: refused at once here, within seconds on every replica",
      responses: { 200: apiKeyRecordSchema },
      handler: async (ctx) => json(200, await apiKeys.revoke(ctx.auth.userId, ctx.params.api_key_id)),
    }),
  ];
}
