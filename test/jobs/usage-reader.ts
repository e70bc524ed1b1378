// Reads a project's usage records back from the tenancy store (lmdb of a
// stopped embedded process, or the cluster's Redis), as billing would.
import type { UsageRecord } from "../../providers/usage.ts";
import type { DataStore } from "../../tenancy/data-store.ts";

export async function projectUsage(store: DataStore, projectId: string): Promise<UsageRecord[]> {
  const records: UsageRecord[] = [];
  let cursor: string | null = null;
  do {
    const page = await store.page(`project-usage:${projectId}`, 100, cursor);
    const batches = (await store.getMany(page.members.map((id) => `usage-batch:${id}`))) as (UsageRecord[] | undefined)[];
    for (const batch of batches) records.push(...(batch ?? []).filter((r) => r.project_id === projectId));
    cursor = page.nextCursor;
  } while (cursor);
  return records;
}
