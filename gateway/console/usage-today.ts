// The console's "usage today" until the billing ledger lands: the usage
// records tenancy/usage-recorder.ts stored since 00:00 UTC for the
// organization's projects, summed per category and key mode. Batches are
// indexed per project by their flush time, newest first, so reading stops
// at the first batch older than the day.
import type { DataStore } from "../../tenancy/data-store.ts";
import type { UsageRecord } from "../../providers/usage.ts";
import type { ConsoleProject, ConsoleUsageRow } from "./console-data.ts";

/** Pages of batches read per project at most (100 each): the console is a glance, not a report. */
const maxPages = 20;

export async function usageTodayFromRecords(store: DataStore, organizationId: string, projects: readonly ConsoleProject[], nowMs: number): Promise<ConsoleUsageRow[]> {
  const dayStart = Math.floor(nowMs / 86_400_000) * 86_400_000;
  const batchIds = new Set<string>();
  for (const project of projects) {
    let cursor: string | null = null;
    for (let page = 0; page < maxPages; page++) {
      const result = await store.page(`project-usage:${project.id}`, 100, cursor);
      // Members are batch ids; the cursor carries the score of the last one.
      for (const id of result.members) batchIds.add(id);
      const lastScore = result.nextCursor ? Number(result.nextCursor.split(".")[0]) : 0;
      if (!result.nextCursor || lastScore < dayStart) break;
      cursor = result.nextCursor;
    }
  }
  const batches = await store.getMany([...batchIds].map((id) => `usage-batch:${id}`));
  const totals = new Map<string, ConsoleUsageRow>();
  for (const batch of batches) {
    if (!Array.isArray(batch)) continue;
    for (const record of batch as UsageRecord[]) {
      if (record.organization_id !== organizationId || Date.parse(record.created_at) < dayStart) continue;
      const key = `${record.category}:${record.live}`;
      const row = totals.get(key) ?? { category: record.category, live: record.live, requests: 0, cost_usd: 0 };
      row.requests += 1;
      row.cost_usd = Math.round((row.cost_usd + record.cost_usd) * 1e6) / 1e6;
      totals.set(key, row);
    }
  }
  return [...totals.values()].sort((a, b) => a.category.localeCompare(b.category) || Number(b.live) - Number(a.live));
}
