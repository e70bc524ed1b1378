// API key management (docs/api/keys.md): session only, owners and admins write.
import { z } from "zod";
import type { ApiKeyService, KeyBudgets } from "../../tenancy/api-keys.ts";
import { allowlistPatternHelp } from "../../providers/router-allowlist.ts";
import { formBodyMaxBytes } from "../body-limits.ts";
import { alertThresholds, monthlyUsd } from "./budget-fields.ts";
import { defineRoute, json, routeGroup } from "../route.ts";
import { usageToDateSchema, withUsageToDate, type ReadUsageToDate } from "../usage-to-date.ts";
import { apiKeyRecordSchema, name, newApiKeySchema, pagedList, scopeList } from "../schemas.ts";

const rateLimit = z.number().int().min(1).max(10_000_000);
const tokenLimit = z.number().int().min(1).max(1_000_000_000);
const maxConcurrent = z.number().int().min(1).max(100_000);
const tierPattern = /^tier:(small|medium|large)$/;
/** A model id, a glob with `*`, or `tier:<tier>`: the characters model ids use, bounded. */
const modelPattern = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9._:/@*-]+$/, `must be ${allowlistPatternHelp}`)
  .refine((p) => !p.startsWith("tier:") || tierPattern.test(p), { message: "a tier pattern is tier:small, tier:medium or tier:large" });
const modelAllowlist = z.array(modelPattern).max(200).describe(`the models the key may use, each ${allowlistPatternHelp}; absent or null: every model; []: none`);
/** The key's own monthly budget, validated as a project's is (budget-fields.ts). */
const keyBudget = {
  monthly_budget_usd: monthlyUsd.nullable().optional().describe("the key's own monthly budget of live spend (USD), beside its project's; null: none"),
  hard_limit: z.boolean().optional().describe("refuse the key's live calls with 402 once its budget is reached (default true); false: alert only"),
  alert_thresholds: alertThresholds.optional().describe("fractions of the key's budget at which key.budget.alert is sent; default [0.5, 0.8, 1.0]"),
};

const createKeyBody = z
  .object({
    name,
    scopes: scopeList.default([]),
    live: z.boolean().default(false),
    rate_limit_per_minute: rateLimit.optional(),
    token_limit_per_minute: tokenLimit.optional().describe("input + output tokens per minute; default: no token limit"),
    models: modelAllowlist.nullable().optional(),
    max_concurrent: maxConcurrent.nullable().optional().describe("calls in flight at once, per replica; default: no limit"),
    ...keyBudget,
  })
  .strict();

/** What PATCH may change: each field present is set (null clears a limit), the others stay. */
const updateKeyBody = z
  .object({
    name: name.optional(),
    rate_limit_per_minute: rateLimit.optional(),
    token_limit_per_minute: tokenLimit.nullable().optional(),
    models: modelAllowlist.nullable().optional(),
    max_concurrent: maxConcurrent.nullable().optional(),
    ...keyBudget,
  })
  .strict();

/** What every key route declares: its document tag, a session, a form's body limit, and the 404 of an environment or key the user may not manage. */
const keyRoute = routeGroup({ tag: "api-keys", auth: "session", maxBodyBytes: formBodyMaxBytes, errors: ["not_found"] });

/** `usageToDate` adds each key's usage to date to the list (absent: zeros); `budgets`: where a key's own budget is enforced (billing). */
export function apiKeyRoutes(apiKeys: ApiKeyService, budgets: KeyBudgets, usageToDate?: ReadUsageToDate) {
  return [
    defineRoute({
      ...keyRoute("post", "/v1/environments/:environment_id/api-keys"),
      summary: "Create an API key; the full key is returned only now",
      body: createKeyBody,
      responses: { 201: newApiKeySchema },
      // quota_exceeded: API_KEYS_PER_PROJECT active keys reached.
      errors: ["not_found", "quota_exceeded"],
      handler: async (ctx) => json(201, await apiKeys.create(ctx.auth.userId, ctx.params.environment_id, ctx.body, budgets)),
    }),
    defineRoute({
      ...keyRoute("get", "/v1/environments/:environment_id/api-keys"),
      summary: "The keys of an environment (never the keys themselves)",
      ...pagedList(apiKeyRecordSchema.extend({ usage: usageToDateSchema })),
      handler: async (ctx) => json(200, await withUsageToDate(await apiKeys.list(ctx.auth.userId, ctx.params.environment_id, ctx.query.limit, ctx.query.cursor), usageToDate)),
    }),
    defineRoute({
      ...keyRoute("patch", "/v1/api-keys/:api_key_id"),
      summary: "Change a key's name and limits (models, rate, tokens, concurrency, monthly budget); in force on every replica within seconds",
      body: updateKeyBody,
      responses: { 200: apiKeyRecordSchema },
      errors: ["not_found", "conflict"],
      handler: async (ctx) => json(200, await apiKeys.update(ctx.auth.userId, ctx.params.api_key_id, ctx.body, budgets)),
    }),
    defineRoute({
      ...keyRoute("delete", "/v1/api-keys/:api_key_id"),
      summary: "Revoke a key: refused at once here, within seconds on every replica",
      responses: { 200: apiKeyRecordSchema },
      handler: async (ctx) => json(200, await apiKeys.revoke(ctx.auth.userId, ctx.params.api_key_id)),
    }),
  ];
}
