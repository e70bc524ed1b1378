// The messages between the gateway thread and the ledger's worker thread:
// one call per LedgerStore method, answered by id. Values cross by
// structured clone (records, Maps and Errors survive it).
import type { LedgerStore } from "./ledger.ts";

export type LedgerMethods = Omit<LedgerStore, "kind">;
export type LedgerMethod = keyof LedgerMethods;

const methods: ReadonlySet<string> = new Set<LedgerMethod>([
  "append",
  "reserve",
  "reserveParts",
  "release",
  "putBudget",
  "getBudget",
  "spent",
  "usageRows",
  "records",
  "usageToDate",
  "pendingAlerts",
  "ackAlert",
  "close",
]);

export function isLedgerMethod(name: unknown): name is LedgerMethod {
  return typeof name === "string" && methods.has(name);
}

export interface LedgerCall<M extends LedgerMethod = LedgerMethod> {
  id: number;
  method: M;
  args: Parameters<LedgerMethods[M]>;
}

export type { WorkerReply as LedgerReply } from "../core/worker-calls.ts";
