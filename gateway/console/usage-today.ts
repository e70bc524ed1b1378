// The console's "usage today" and "budgets", read from the billing ledger
// (tenancy/ledger.ts): today's rows of each of the organization's projects,
// summed per category and key mode, and each project's monthly budget with
// what its live keys spent this month. Money stays integer nano-dollars
// until it is shown.
import { usd } from "../../tenancy/billing.ts";
import { periodOf, type LedgerStore } from "../../tenancy/ledger.ts";
import type { ConsoleBudget, ConsoleProject, ConsoleUsageRow } from "./console-data.ts";

export async function usageTodayFromLedger(ledger: LedgerStore, projects: readonly ConsoleProject[], nowMs: number): Promise<ConsoleUsageRow[]> {
  const today = new Date(nowMs).toISOString().slice(0, 10);
  const period = periodOf(today);
  const totals = new Map<string, { category: string; live: boolean; requests: number; nanos: number }>();
  for (const project of projects) {
    for (const row of await ledger.usageRows(project.id, period, period)) {
      if (row.day !== today) continue;
      const key = `${row.category}:${row.live}`;
      const total = totals.get(key) ?? { category: row.category, live: row.live, requests: 0, nanos: 0 };
      total.requests += row.calls;
      total.nanos += row.cost_nanos;
      totals.set(key, total);
    }
  }
  return [...totals.values()]
    .map((t) => ({ category: t.category, live: t.live, requests: t.requests, cost_usd: usd(t.nanos) }))
    .sort((a, b) => a.category.localeCompare(b.category) || Number(b.live) - Number(a.live));
}

export async function budgetsFromLedger(ledger: LedgerStore, projects: readonly ConsoleProject[], nowMs: number): Promise<ConsoleBudget[]> {
  const period = periodOf(new Date(nowMs).toISOString());
  const budgets: ConsoleBudget[] = [];
  for (const project of projects) {
    const budget = await ledger.getBudget(project.id);
    if (!budget) continue;
    budgets.push({
      project_id: project.id,
      project_name: project.name,
      monthly_limit_usd: budget.monthly_limit_usd,
      spent_usd: usd(await ledger.spent(project.id, period)),
      hard_limit: budget.hard_limit,
    });
  }
  return budgets;
}
