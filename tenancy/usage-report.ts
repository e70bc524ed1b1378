// What GET /v1/projects/{id}/usage and the budget routes answer
// (docs/api/usage-budgets-rate-limits.md): session only, owners and admins; another organization's
// project is 404. Totals are summed as BigInt nano-dollars and shown in USD
// rounded to the micro-dollar, live and test apart.
import { z } from "zod";
import type { Clock } from "../core/clock.ts";
import { isoTime } from "../core/clock.ts";
import { requireRole } from "./access.ts";
import type { Billing } from "./billing.ts";
import { usd } from "./billing.ts";
import { periodOf, type StoredBudget, type UsageRow } from "./ledger.ts";
import type { OrganizationService } from "./organizations.ts";

/** `cache`: "hit" (answered from the response cache) or "none"; `byok`: "byok" (the organization's own provider credentials) or "troupe". */
export const groupByValues = ["category", "model", "environment", "key", "day", "cache", "byok"] as const;
export type GroupBy = (typeof groupByValues)[number];

export const defaultThresholds = [0.5, 0.8, 1.0];

// The answers' schemas: the routes declare them (OpenAPI) and the types below are derived from them, so the
// document and what the code returns cannot drift apart.
const usdAmount = z.number().min(0);
export const usageTotalsSchema = z.object({
  cost_usd: usdAmount.describe("rounded to the micro-dollar"),
  cost_nanos: z.number().int().min(0).describe("exact, in nano-dollars"),
  calls: z.number().int().min(0),
  input_tokens: z.number().int().min(0),
  cached_input_tokens: z.number().int().min(0).describe("of input_tokens, those read from a provider's prompt cache (billed at the model's cached price)"),
  cache_write_input_tokens: z.number().int().min(0).describe("of input_tokens, those written to a prompt cache (billed at the model's cache-write price)"),
  output_tokens: z.number().int().min(0),
  units: z.number().min(0).describe("per-unit categories: images, seconds, characters"),
});

export const usageSchema = z.object({
  project_id: z.string(),
  from: z.string(),
  to: z.string(),
  currency: z.literal("USD"),
  live: usageTotalsSchema.describe("billed: live keys"),
  test: usageTotalsSchema.describe("unbilled: test keys (cost 0)"),
  group_by: z.enum(groupByValues).nullable(),
  groups: z.array(z.object({ key: z.string(), live: usageTotalsSchema, test: usageTotalsSchema })),
});

export const budgetSchema = z.object({
  project_id: z.string(),
  monthly_limit_usd: z.number().nullable(),
  alert_thresholds: z.array(z.number()),
  hard_limit: z.boolean(),
  updated_at: z.string().nullable(),
  period: z.string().describe("the current calendar month (UTC), YYYY-MM"),
  spent_usd: usdAmount.describe("live spend this period"),
});

export type UsageTotals = z.infer<typeof usageTotalsSchema>;
export type UsageReport = z.infer<typeof usageSchema>;
export type BudgetView = z.infer<typeof budgetSchema>;

interface Sum {
  cost: bigint;
  calls: bigint;
  input: bigint;
  output: bigint;
  units: bigint;
  cached: bigint;
  written: bigint;
}

const zero = (): Sum => ({ cost: 0n, calls: 0n, input: 0n, output: 0n, units: 0n, cached: 0n, written: 0n });

function add(sum: Sum, row: UsageRow): void {
  sum.cost += BigInt(row.cost_nanos);
  sum.calls += BigInt(row.calls);
  sum.input += BigInt(row.input_tokens);
  sum.output += BigInt(row.output_tokens);
  sum.units += BigInt(row.units_micro);
  sum.cached += BigInt(row.cached_input_tokens);
  sum.written += BigInt(row.cache_write_input_tokens);
}

function totals(sum: Sum): UsageTotals {
  const nanos = Number(sum.cost);
  return {
    cost_usd: usd(nanos),
    cost_nanos: nanos,
    calls: Number(sum.calls),
    input_tokens: Number(sum.input),
    cached_input_tokens: Number(sum.cached),
    cache_write_input_tokens: Number(sum.written),
    output_tokens: Number(sum.output),
    units: Number(sum.units) / 1_000_000,
  };
}

function groupKey(row: UsageRow, by: GroupBy): string {
  switch (by) {
    case "category":
      return row.category;
    case "model":
      return row.model;
    case "environment":
      return row.environment_id;
    case "key":
      return row.api_key_id;
    case "day":
      return row.day;
    case "cache":
      return row.cache ?? "none";
    case "byok":
      return row.byok ? "byok" : "troupe";
  }
}

export interface UsageQuery {
  from?: string | undefined;
  to?: string | undefined;
  group_by?: GroupBy | undefined;
}

export interface UsageReportsDeps {
  orgs: OrganizationService;
  billing: Billing;
  clock: Clock;
}

export class UsageReports {
  private readonly deps: UsageReportsDeps;

  constructor(deps: UsageReportsDeps) {
    this.deps = deps;
  }

  private async managed(userId: string, projectId: string, action: string) {
    const { project, membership } = await this.deps.orgs.projectFor(userId, projectId);
    requireRole(membership, "admin", action);
    return project;
  }

  async usage(userId: string, projectId: string, query: UsageQuery): Promise<UsageReport> {
    await this.managed(userId, projectId, "reading usage");
    const today = isoTime(this.deps.clock.now()).slice(0, 10);
    const from = query.from ?? `${today.slice(0, 7)}-01`;
    const to = query.to ?? today;
    // Any range: the ledger reads only the months that have usage; from after to is simply empty.
    const rows = (await this.deps.billing.ledger.usageRows(projectId, from.slice(0, 7), to.slice(0, 7))).filter((r) => r.day >= from && r.day <= to);
    const live = zero();
    const test = zero();
    const groups = new Map<string, { live: Sum; test: Sum }>();
    for (const row of rows) {
      add(row.live ? live : test, row);
      if (!query.group_by) continue;
      const key = groupKey(row, query.group_by);
      let group = groups.get(key);
      if (!group) {
        group = { live: zero(), test: zero() };
        groups.set(key, group);
      }
      add(row.live ? group.live : group.test, row);
    }
    return {
      project_id: projectId,
      from,
      to,
      currency: "USD",
      live: totals(live),
      test: totals(test),
      group_by: query.group_by ?? null,
      groups: [...groups.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([key, g]) => ({ key, live: totals(g.live), test: totals(g.test) })),
    };
  }

  async getBudget(userId: string, projectId: string) {
    await this.managed(userId, projectId, "reading the budget");
    const budget = await this.deps.billing.ledger.getBudget(projectId);
    return this.present(projectId, budget);
  }

  async putBudget(userId: string, projectId: string, input: { monthly_limit_usd: number; alert_thresholds?: number[] | undefined; hard_limit?: boolean | undefined }) {
    await this.managed(userId, projectId, "setting the budget");
    const budget: StoredBudget = {
      monthly_limit_usd: input.monthly_limit_usd,
      alert_thresholds: [...new Set(input.alert_thresholds ?? defaultThresholds)].sort((a, b) => a - b),
      hard_limit: input.hard_limit ?? false,
      updated_at: isoTime(this.deps.clock.now()),
    };
    await this.deps.billing.putBudget(projectId, budget);
    return this.present(projectId, budget);
  }

  private async present(projectId: string, budget: StoredBudget | undefined): Promise<BudgetView> {
    const period = periodOf(isoTime(this.deps.clock.now()));
    const spent = await this.deps.billing.ledger.spent(projectId, period);
    return {
      project_id: projectId,
      monthly_limit_usd: budget?.monthly_limit_usd ?? null,
      alert_thresholds: budget?.alert_thresholds ?? defaultThresholds,
      hard_limit: budget?.hard_limit ?? false,
      updated_at: budget?.updated_at ?? null,
      period,
      spent_usd: usd(spent),
    };
  }
}
