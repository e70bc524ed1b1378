// The ledger's shared helpers (tenancy/ledger.ts), pure functions both stores
// use, in process: what it proves is the exact names and figures both stores
// write and read back —
// - a record's period is its UTC month; a limit is rounded to the nearest
//   nano-dollar, a threshold's mark rounded up (crossing means spent ≥ mark),
//   units counted in millionths rounded to the nearest;
// - an aggregate row's key: day, live, category, model, environment and key,
//   tab-separated, with two trailing fields only for a cache hit or a BYOK
//   call; its counters (c i o u n r w) add into the row their field names,
//   an unknown counter adds nothing, and a key read back gives the same row;
// - an alert's event id and pending name, and a budget's scope, for a
//   project's budget and a key's own.
import t from "tap";
import { addToRows, alertEventId, budgetScope, limitNanos, nanosPerUsd, pendingAlertName, periodOf, rowKey, thresholdMark, unitsMicro, type StoredBudget, type UsageRow } from "../../tenancy/ledger.ts";
import { usageRecord } from "../support/usage-record.ts";

const budget = (monthly_limit_usd: number): StoredBudget => ({ monthly_limit_usd, alert_thresholds: [], hard_limit: true, updated_at: "2026-03-01T00:00:00.000Z" });

const zeros = { cost_nanos: 0, input_tokens: 0, output_tokens: 0, units_micro: 0, calls: 0, cached_input_tokens: 0, cache_write_input_tokens: 0 };

t.test("a period is the UTC month of an ISO time", async (t) => {
  t.equal(periodOf("2026-12-31T23:59:59.999Z"), "2026-12");
  t.equal(periodOf("2027-01-01T00:00:00.000Z"), "2027-01");
  t.equal(nanosPerUsd, 1_000_000_000);
});

t.test("a limit rounds to the nearest nano-dollar; a threshold's mark rounds up", async (t) => {
  t.equal(limitNanos(budget(0.0000000015)), 2, "1.5 rounds up");
  t.equal(limitNanos(budget(0.0000000014)), 1, "1.4 rounds down");
  t.equal(limitNanos(budget(25)), 25_000_000_000);
  t.equal(thresholdMark(budget(0.0000000024), 0.5), 2, "1.2 rounds up: spent 1 has not crossed it");
  t.equal(thresholdMark(budget(0.000000005), 0.3), 2, "1.5 rounds up");
  t.equal(thresholdMark(budget(1), 0.8), 800_000_000);
});

t.test("units are counted in millionths, rounded to the nearest", async (t) => {
  t.equal(unitsMicro(usageRecord({ units: 0.0000025 })), 3);
  t.equal(unitsMicro(usageRecord({ units: 0.0000014 })), 1);
  t.equal(unitsMicro(usageRecord({ units: 3.0000004 })), 3_000_000);
  t.equal(unitsMicro(usageRecord({ units: 0 })), 0);
});

const base = "2026-03-15\t1\tchat\tgpt-4.1-mini\tenv_1\tkey_1";

t.test("a row key: six tab-separated fields, two more only for a cache hit or a BYOK call", async (t) => {
  t.equal(rowKey(usageRecord()), base);
  t.equal(rowKey(usageRecord({ live: false, category: "images", model: "m", environment_id: "env_2", api_key_id: "key_2", created_at: "2026-04-01T23:59:59.000Z" })), "2026-04-01\t0\timages\tm\tenv_2\tkey_2");
  t.equal(rowKey(usageRecord({ cache: "hit" })), `${base}\thit\t`);
  t.equal(rowKey(usageRecord({ byok: true })), `${base}\t\t1`);
  t.equal(rowKey(usageRecord({ cache: "hit", byok: true })), `${base}\thit\t1`);
  t.equal(rowKey(usageRecord({ cache: undefined, byok: undefined })), base);
});

t.test("each counter adds into its own field of the row its key names", async (t) => {
  const rows = new Map<string, UsageRow>();
  addToRows(rows, `${base}\tc`, 5);
  addToRows(rows, `${base}\tc`, 7);
  addToRows(rows, `${base}\ti`, 11);
  addToRows(rows, `${base}\to`, 13);
  addToRows(rows, `${base}\tu`, 17);
  addToRows(rows, `${base}\tn`, 19);
  addToRows(rows, `${base}\tr`, 23);
  addToRows(rows, `${base}\tw`, 29);
  addToRows(rows, `${base}\tx`, 31);
  t.strictSame([...rows.keys()], [base], "one row");
  t.strictSame(rows.get(base), {
    day: "2026-03-15",
    live: true,
    category: "chat",
    model: "gpt-4.1-mini",
    environment_id: "env_1",
    api_key_id: "key_1",
    cache: null,
    byok: false,
    cost_nanos: 12,
    input_tokens: 11,
    output_tokens: 13,
    units_micro: 17,
    calls: 19,
    cached_input_tokens: 23,
    cache_write_input_tokens: 29,
  });
});

t.test("a row key read back gives the row's fields, cache hits and BYOK included", async (t) => {
  const rows = new Map<string, UsageRow>();
  const keys = [rowKey(usageRecord({ live: false })), rowKey(usageRecord({ cache: "hit" })), rowKey(usageRecord({ byok: true })), rowKey(usageRecord({ cache: "hit", byok: true }))];
  for (const key of keys) addToRows(rows, `${key}\tn`, 1);
  t.strictSame(
    keys.map((key) => rows.get(key)),
    [
      { day: "2026-03-15", live: false, category: "chat", model: "gpt-4.1-mini", environment_id: "env_1", api_key_id: "key_1", cache: null, byok: false, ...zeros, calls: 1 },
      { day: "2026-03-15", live: true, category: "chat", model: "gpt-4.1-mini", environment_id: "env_1", api_key_id: "key_1", cache: "hit", byok: false, ...zeros, calls: 1 },
      { day: "2026-03-15", live: true, category: "chat", model: "gpt-4.1-mini", environment_id: "env_1", api_key_id: "key_1", cache: null, byok: true, ...zeros, calls: 1 },
      { day: "2026-03-15", live: true, category: "chat", model: "gpt-4.1-mini", environment_id: "env_1", api_key_id: "key_1", cache: "hit", byok: true, ...zeros, calls: 1 },
    ],
  );
});

t.test("a short or foreign key reads as empty fields, a test row, no cache, no BYOK", async (t) => {
  const rows = new Map<string, UsageRow>();
  addToRows(rows, "2026-03-15\tc", 3);
  addToRows(rows, "2026-03-16\tyes\tc\tm\te\tk\tmiss\ttrue\tc", 4);
  addToRows(rows, "2026-03-17\t1\tchat\tm\te\tk\tx", 5);
  t.strictSame(rows.get("2026-03-15"), { day: "2026-03-15", live: false, category: "", model: "", environment_id: "", api_key_id: "", cache: null, byok: false, ...zeros, cost_nanos: 3 });
  t.strictSame(rows.get("2026-03-16\tyes\tc\tm\te\tk\tmiss\ttrue"), { day: "2026-03-16", live: false, category: "c", model: "m", environment_id: "e", api_key_id: "k", cache: null, byok: false, ...zeros, cost_nanos: 4 });
  t.strictSame(rows.get("2026-03-17\t1\tchat\tm\te\tk"), { day: "2026-03-17", live: true, category: "chat", model: "m", environment_id: "e", api_key_id: "k", cache: null, byok: false, ...zeros }, "an unknown counter makes the row and adds nothing");
  t.equal(rows.size, 3);
});

t.test("an alert's event id and pending name, of a project's budget and of a key's", async (t) => {
  const project = { project_id: "prj_1", period: "2026-03", threshold: 0.8 };
  const key = { ...project, api_key_id: "key_1" };
  t.equal(alertEventId(project), "evt_budget_prj_1_2026-03_0.8");
  t.equal(alertEventId({ ...project, api_key_id: undefined }), "evt_budget_prj_1_2026-03_0.8");
  t.equal(alertEventId(key), "evt_key_budget_key_1_2026-03_0.8");
  t.equal(pendingAlertName(project), "prj_1:2026-03:0.8");
  t.equal(pendingAlertName(key), "prj_1:key_1:2026-03:0.8");
});

t.test("a budget's scope: the project's id, or project and key tab-separated", async (t) => {
  t.equal(budgetScope("prj_1"), "prj_1");
  t.equal(budgetScope("prj_1", undefined), "prj_1");
  t.equal(budgetScope("prj_1", "key_1"), "prj_1\tkey_1");
});
