// Project budgets and usage (docs/api/usage-budgets-rate-limits.md): session only,
// owners and admins; another organization's project is 404.
import { z } from "zod";
import { budgetSchema, groupByValues, usageSchema, type UsageReports } from "../../tenancy/usage-report.ts";
import { formBodyMaxBytes } from "../body-limits.ts";
import { alertThresholds, monthlyUsd } from "./budget-fields.ts";
import { defineRoute, json, routeGroup } from "../route.ts";

const usageQuery = z
  .object({
    from: z.iso.date().optional().describe("first day (UTC), inclusive; default: the first day of this month"),
    to: z.iso.date().optional().describe("last day (UTC), inclusive; default: today (a to before from is an empty range)"),
    group_by: z.enum(groupByValues).optional(),
  })
  .strict();

const budgetBody = z
  .object({
    monthly_limit_usd: monthlyUsd,
    alert_thresholds: alertThresholds.optional().describe("fractions of the limit; default [0.5, 0.8, 1.0]"),
    hard_limit: z.boolean().optional().describe("refuse live calls with 402 once the limit is reached; default false"),
  })
  .strict();

/** What every billing route declares: its document tag, a session, a form's body limit, and the 404 of a project the user may not manage. */
const projectRoute = routeGroup({ tag: "billing", auth: "session", maxBodyBytes: formBodyMaxBytes, errors: ["not_found"] });

export function billingRoutes(reports: UsageReports) {
  return [
    defineRoute({
      ...projectRoute("get", "/v1/projects/:project_id/usage"),
      summary: "A project's usage: totals and breakdowns, live and test apart (owners and admins)",
      query: usageQuery,
      responses: { 200: usageSchema },
      handler: async (ctx) => json(200, await reports.usage(ctx.auth.userId, ctx.params.project_id, ctx.query)),
    }),
    defineRoute({
      ...projectRoute("get", "/v1/projects/:project_id/budget"),
      summary: "A project's monthly budget and this month's spend (owners and admins)",
      responses: { 200: budgetSchema },
      handler: async (ctx) => json(200, await reports.getBudget(ctx.auth.userId, ctx.params.project_id)),
    }),
    defineRoute({
      ...projectRoute("put", "/v1/projects/:project_id/budget"),
      summary: "Set a project's monthly budget: limit, alert thresholds, hard limit (owners and admins)",
      body: budgetBody,
      responses: { 200: budgetSchema },
      handler: async (ctx) => json(200, await reports.putBudget(ctx.auth.userId, ctx.params.project_id, ctx.body)),
    }),
  ];
}
