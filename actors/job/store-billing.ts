// How a job bills until the billing ledger lands (the `bill` dependency):
// each record is written durably, before the step that earned it commits,
// under a key derived from its request_id (`job:<id>:segment:<n>`), in the
// usage-batch layout the usage recorder uses (tenancy/usage-recorder.ts). A
// step repeated after a crash writes the same key again: billed once.
import type { UsageRecord } from "../../providers/usage.ts";
import type { DataStore } from "../../tenancy/data-store.ts";

export const jobUsageBatchKey = (requestId: string) => `usage-batch:${requestId}`;

export function storeBilling(store: DataStore, now: () => number): (record: UsageRecord) => Promise<void> {
  return async (record) => {
    await store.apply([
      { op: "put", key: jobUsageBatchKey(record.request_id), value: [record] },
      { op: "index", key: `project-usage:${record.project_id}`, member: record.request_id, score: now() },
    ]);
  };
}
