// The ledger thread's message check (tenancy/ledger-worker.ts answers only
// calls whose method passes it): every LedgerStore method passes, nothing
// else does. The threaded store's tests reach it on the worker thread only,
// whose coverage mutation testing does not see (docs/testing.md).
import t from "tap";
import { isLedgerMethod, type LedgerMethod } from "../../tenancy/ledger-rpc.ts";

const all: LedgerMethod[] = ["append", "reserve", "reserveParts", "release", "putBudget", "getBudget", "spent", "usageRows", "records", "usageToDate", "pendingAlerts", "ackAlert", "close"];

t.test("every ledger method is one", async (t) => {
  for (const method of all) t.equal(isLedgerMethod(method), true, method);
});

t.test("anything else is not", async (t) => {
  for (const other of ["kind", "", "Append", "append ", "constructor", "toString", "has", "__proto__"]) t.equal(isLedgerMethod(other), false, JSON.stringify(other));
  for (const other of [undefined, null, 42, {}, ["append"], { toString: () => "append" }]) t.equal(isLedgerMethod(other), false, String(other));
});
