// Reads a project's billed records back from the ledger (the lmdb ledger of
// a stopped embedded process, or the cluster's Redis), as an audit would.
import type { UsageRecord } from "../../providers/usage.ts";
import { periodOf, type LedgerStore } from "../../tenancy/ledger.ts";

export async function projectUsage(ledger: LedgerStore, projectId: string): Promise<UsageRecord[]> {
  return ledger.records(projectId, periodOf(new Date().toISOString()));
}
