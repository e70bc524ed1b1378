// The usage report and the budget view (tenancy/usage-report.ts) in process,
// on an injected clock, over a real organization service and real billing
// whose embedded ledger answers scripted aggregate rows and spend (and keeps
// what it was asked). What it pins:
// - who may read usage and read or set the budget: owners and admins; a
//   member is 403 with the action named (and sets nothing); another
//   organization's project or an unknown one is 404;
// - the range: this month to today by default, each end on its own, both
//   ends inclusive to the day, a range across months asking the ledger for
//   those months, from after to empty;
// - the totals: every counter summed live and test apart, cost exact in
//   nano-dollars and rounded to the micro-dollar in USD, units in millionths;
// - grouping by each dimension (cache "hit"/"none", byok "byok"/"troupe"),
//   groups sorted by key whatever the rows' order (past V8's short-array
//   sort too), no groups without group_by;
// - the budget: defaults with none stored; thresholds deduplicated and
//   sorted, hard_limit false unless set, updated_at the clock's; the period
//   and its spend from the clock's month;
// - the answers' schemas and the descriptions they publish (OpenAPI).
// Fast on purpose: the mutation run runs this file once per mutant.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import { rejectedWith } from "../support/thrown-by.ts";
import { isoTime, type Clock } from "../../core/clock.ts";
import { createLogger } from "../../core/log.ts";
import { loadConfig } from "../../gateway/config.ts";
import { ApiKeyService } from "../../tenancy/api-keys.ts";
import { Billing } from "../../tenancy/billing.ts";
import { EmbeddedDataStore } from "../../tenancy/embedded-data-store.ts";
import { EmbeddedLedgerStore } from "../../tenancy/embedded-ledger-store.ts";
import type { UsageRow } from "../../tenancy/ledger.ts";
import { OrganizationService } from "../../tenancy/organizations.ts";
import { keys } from "../../tenancy/records.ts";
import type { Membership, Project, Role } from "../../tenancy/types.ts";
import {
  budgetSchema,
  defaultThresholds,
  groupByValues,
  usageSchema,
  usageTotalsSchema,
  UsageReports,
  type GroupBy,
  type UsageReport,
  type UsageTotals,
} from "../../tenancy/usage-report.ts";

/** Noon on 15 March 2026 (UTC): "today" is 2026-03-15, the month 2026-03. */
const startMs = Date.UTC(2026, 2, 15, 12);
const log = createLogger("silent");

/** The embedded ledger, but its aggregate rows and spend are the test's, and it keeps what it was asked. */
class ScriptedLedger extends EmbeddedLedgerStore {
  rows: UsageRow[] = [];
  spentBy = new Map<string, number>();
  readonly rowsAsked: [string, string, string][] = [];
  readonly spentAsked: [string, string][] = [];

  override async usageRows(projectId: string, fromPeriod: string, toPeriod: string): Promise<UsageRow[]> {
    this.rowsAsked.push([projectId, fromPeriod, toPeriod]);
    return this.rows;
  }

  override async spent(projectId: string, period: string): Promise<number> {
    this.spentAsked.push([projectId, period]);
    return this.spentBy.get(period) ?? 0;
  }
}

const dir = mkdtempSync(join(tmpdir(), "troupe-usage-report-unit-"));
const clock: Clock & { ms: number } = { ms: startMs, now: () => clock.ms };
const store = new EmbeddedDataStore(dir, clock);
const ledger = new ScriptedLedger(dir, { now: clock.now });
const config = loadConfig({ TROUPE_DATA_DIR: dir });
const orgs = new OrganizationService(store, clock, new ApiKeyService(store, config.tenancy, clock, log), config.tenancy.quotas);
const billing = new Billing({ ledger, store, clock, log });
const reports = new UsageReports({ orgs, billing, clock });
t.teardown(async () => {
  await billing.stop();
  await ledger.close();
  await store.close();
});

const project: Project = { id: "prj_report", organization_id: "org_report", name: "report", created_at: isoTime(startMs) };
/** A project of the same organization whose budget is never set. */
const bare: Project = { id: "prj_bare", organization_id: "org_report", name: "bare", created_at: isoTime(startMs) };
const elsewhere: Project = { id: "prj_elsewhere", organization_id: "org_elsewhere", name: "elsewhere", created_at: isoTime(startMs) };
const member = (organization_id: string, user_id: string, role: Role): Membership => ({ organization_id, user_id, role, created_at: isoTime(startMs) });

t.before(async () => {
  await store.apply([
    { op: "put", key: keys.project(project.id), value: project },
    { op: "put", key: keys.membership(project.organization_id, "usr_owner"), value: member(project.organization_id, "usr_owner", "owner") },
    { op: "put", key: keys.membership(project.organization_id, "usr_admin"), value: member(project.organization_id, "usr_admin", "admin") },
    { op: "put", key: keys.membership(project.organization_id, "usr_member"), value: member(project.organization_id, "usr_member", "member") },
    { op: "put", key: keys.project(bare.id), value: bare },
    { op: "put", key: keys.project(elsewhere.id), value: elsewhere },
    { op: "put", key: keys.membership(elsewhere.organization_id, "usr_other"), value: member(elsewhere.organization_id, "usr_other", "owner") },
  ]);
});

/** Each test starts on the 15th with no rows, no spend and nothing asked yet. */
t.beforeEach(() => {
  clock.ms = startMs;
  ledger.rows = [];
  ledger.spentBy = new Map();
  ledger.rowsAsked.length = 0;
  ledger.spentAsked.length = 0;
});

function row(overrides: Partial<UsageRow>): UsageRow {
  return {
    day: "2026-03-15",
    live: true,
    category: "chat",
    model: "gpt-4.1-mini",
    environment_id: "env_prod",
    api_key_id: "key_live",
    cost_nanos: 1000,
    input_tokens: 10,
    output_tokens: 5,
    units_micro: 0,
    calls: 1,
    cached_input_tokens: 0,
    cache_write_input_tokens: 0,
    cache: null,
    byok: false,
    ...overrides,
  };
}

const none: UsageTotals = { cost_usd: 0, cost_nanos: 0, calls: 0, input_tokens: 0, cached_input_tokens: 0, cache_write_input_tokens: 0, output_tokens: 0, units: 0 };

/** The report, checked against the schema the route declares (which would strip or refuse what it does not name). */
async function usage(t: Test, query: { from?: string; to?: string; group_by?: GroupBy }): Promise<UsageReport> {
  const report = await reports.usage("usr_owner", project.id, query);
  t.strictSame(usageSchema.parse(report), report, "the answer is what its schema declares");
  return report;
}

/** Each group as [key, live calls, test calls]. */
const callsByGroup = (report: UsageReport) => report.groups.map((g) => [g.key, g.live.calls, g.test.calls]);

t.test("owners and admins read usage and the budget; a member is 403 naming the action and sets nothing; another organization's project is 404", async (t) => {
  for (const user of ["usr_owner", "usr_admin"]) {
    t.equal((await reports.usage(user, project.id, {})).project_id, project.id, `${user} reads usage`);
    t.equal((await reports.getBudget(user, project.id)).project_id, project.id, `${user} reads the budget`);
  }
  t.equal((await reports.putBudget("usr_admin", project.id, { monthly_limit_usd: 5 })).monthly_limit_usd, 5, "an admin sets the budget");
  const asked = ledger.rowsAsked.length;
  const cases: [string, () => Promise<unknown>][] = [
    ["reading usage", () => reports.usage("usr_member", project.id, {})],
    ["reading the budget", () => reports.getBudget("usr_member", project.id)],
    ["setting the budget", () => reports.putBudget("usr_member", project.id, { monthly_limit_usd: 1 })],
  ];
  for (const [action, call] of cases) {
    const error = await rejectedWith(call());
    t.equal(error.code, "forbidden", action);
    t.equal(error.message, `${action} requires the admin role or higher; you are member`);
  }
  t.equal(ledger.rowsAsked.length, asked, "the ledger is not read for a refused report");
  t.equal((await ledger.getBudget(project.id))?.monthly_limit_usd, 5, "a member's budget is not written");
  for (const [user, id] of [
    ["usr_other", project.id],
    ["usr_owner", elsewhere.id],
    ["usr_owner", "prj_unknown"],
  ] as const) {
    t.equal((await rejectedWith(reports.usage(user, id, {}))).code, "not_found", `${user} on ${id}: usage`);
    t.equal((await rejectedWith(reports.getBudget(user, id))).code, "not_found", `${user} on ${id}: budget`);
    t.equal((await rejectedWith(reports.putBudget(user, id, { monthly_limit_usd: 1 }))).code, "not_found", `${user} on ${id}: set budget`);
  }
  t.equal(await ledger.getBudget(elsewhere.id), undefined, "nothing written to a project out of reach");
});

t.test("by default: from the first of this month to today, both days counted; the days either side are not", async (t) => {
  ledger.rows = [
    row({ day: "2026-02-28", calls: 1 }),
    row({ day: "2026-03-01", calls: 2 }),
    row({ day: "2026-03-15", calls: 4 }),
    row({ day: "2026-03-16", calls: 8 }),
  ];
  const report = await usage(t, {});
  t.equal(report.from, "2026-03-01");
  t.equal(report.to, "2026-03-15");
  t.equal(report.currency, "USD");
  t.equal(report.project_id, project.id);
  t.same(ledger.rowsAsked, [[project.id, "2026-03", "2026-03"]], "the ledger is asked for this month");
  t.equal(report.live.calls, 2 + 4, "the first of the month and today");
  t.equal(report.group_by, null);
  t.strictSame(report.groups, [], "no groups without group_by");
});

t.test("a range across months asks the ledger for each end's month and keeps the days from..to inclusive", async (t) => {
  ledger.rows = [
    row({ day: "2026-01-19", calls: 1 }),
    row({ day: "2026-01-20", calls: 2 }),
    row({ day: "2026-02-10", calls: 4 }),
    row({ day: "2026-03-02", calls: 8 }),
    row({ day: "2026-03-03", calls: 16 }),
  ];
  const report = await usage(t, { from: "2026-01-20", to: "2026-03-02" });
  t.equal(report.from, "2026-01-20");
  t.equal(report.to, "2026-03-02");
  t.same(ledger.rowsAsked, [[project.id, "2026-01", "2026-03"]]);
  t.equal(report.live.calls, 2 + 4 + 8);
});

t.test("one end given: the other is its default (today, or the first of this month)", async (t) => {
  ledger.rows = [row({ day: "2026-02-27", calls: 1 }), row({ day: "2026-03-01", calls: 2 }), row({ day: "2026-03-10", calls: 4 }), row({ day: "2026-03-15", calls: 8 })];
  const fromOnly = await usage(t, { from: "2026-02-27" });
  t.equal(fromOnly.from, "2026-02-27");
  t.equal(fromOnly.to, "2026-03-15");
  t.equal(fromOnly.live.calls, 1 + 2 + 4 + 8);
  const toOnly = await usage(t, { to: "2026-03-10" });
  t.equal(toOnly.from, "2026-03-01");
  t.equal(toOnly.to, "2026-03-10");
  t.equal(toOnly.live.calls, 2 + 4);
  t.same(ledger.rowsAsked, [
    [project.id, "2026-02", "2026-03"],
    [project.id, "2026-03", "2026-03"],
  ]);
});

t.test("today follows the clock, to the day and the month", async (t) => {
  clock.ms = Date.UTC(2026, 3, 1, 0, 0, 0, 1);
  ledger.rows = [row({ day: "2026-03-31", calls: 1 }), row({ day: "2026-04-01", calls: 2 })];
  const report = await usage(t, {});
  t.equal(report.from, "2026-04-01");
  t.equal(report.to, "2026-04-01");
  t.same(ledger.rowsAsked, [[project.id, "2026-04", "2026-04"]]);
  t.equal(report.live.calls, 2);
});

t.test("from after to is empty, grouped or not", async (t) => {
  ledger.rows = [row({ day: "2026-03-10" }), row({ day: "2026-03-15" }), row({ day: "2026-03-20" })];
  const report = await usage(t, { from: "2026-03-20", to: "2026-03-10", group_by: "day" });
  t.strictSame(report.live, none);
  t.strictSame(report.test, none);
  t.strictSame(report.groups, []);
  t.equal(report.group_by, "day");
  t.same(ledger.rowsAsked, [[project.id, "2026-03", "2026-03"]]);
});

t.test("every counter is summed, live and test apart; cost exact in nano-dollars and in USD to the micro-dollar; units from millionths", async (t) => {
  ledger.rows = [
    row({ cost_nanos: 1_234_567, calls: 2, input_tokens: 100, output_tokens: 40, units_micro: 1_500_000, cached_input_tokens: 30, cache_write_input_tokens: 7 }),
    row({ live: false, cost_nanos: 0, calls: 4, input_tokens: 50, output_tokens: 10, units_micro: 500_000, cached_input_tokens: 5, cache_write_input_tokens: 1 }),
    row({ cost_nanos: 2_000_001, calls: 3, input_tokens: 200, output_tokens: 60, units_micro: 250_000, cached_input_tokens: 20, cache_write_input_tokens: 3 }),
  ];
  const live: UsageTotals = {
    cost_usd: 0.003235,
    cost_nanos: 3_234_568,
    calls: 5,
    input_tokens: 300,
    cached_input_tokens: 50,
    cache_write_input_tokens: 10,
    output_tokens: 100,
    units: 1.75,
  };
  const test: UsageTotals = { cost_usd: 0, cost_nanos: 0, calls: 4, input_tokens: 50, cached_input_tokens: 5, cache_write_input_tokens: 1, output_tokens: 10, units: 0.5 };
  const report = await usage(t, {});
  t.strictSame(report.live, live);
  t.strictSame(report.test, test);
  const grouped = await usage(t, { group_by: "model" });
  t.strictSame(grouped.groups, [{ key: "gpt-4.1-mini", live, test }], "a group's totals are summed the same way");
  t.strictSame(grouped.live, live);
});

// Five rows whose first holds the greatest key of every dimension, so the groups come in an order sorting must change.
const mixed: UsageRow[] = [
  row({ day: "2026-03-03", live: true, category: "speech", model: "m-c", environment_id: "env_c", api_key_id: "key_c", cache: null, byok: false, calls: 1 }),
  row({ day: "2026-03-01", live: false, category: "chat", model: "m-a", environment_id: "env_a", api_key_id: "key_a", cache: "hit", byok: true, calls: 2 }),
  row({ day: "2026-03-02", live: true, category: "image", model: "m-b", environment_id: "env_b", api_key_id: "key_b", cache: "hit", byok: false, calls: 4 }),
  row({ day: "2026-03-01", live: true, category: "chat", model: "m-c", environment_id: "env_a", api_key_id: "key_c", cache: null, byok: true, calls: 8 }),
  row({ day: "2026-03-03", live: false, category: "speech", model: "m-a", environment_id: "env_b", api_key_id: "key_a", cache: null, byok: false, calls: 16 }),
];

const expectedGroups: Record<GroupBy, (string | number)[][]> = {
  category: [
    ["chat", 8, 2],
    ["image", 4, 0],
    ["speech", 1, 16],
  ],
  model: [
    ["m-a", 0, 18],
    ["m-b", 4, 0],
    ["m-c", 9, 0],
  ],
  environment: [
    ["env_a", 8, 2],
    ["env_b", 4, 16],
    ["env_c", 1, 0],
  ],
  key: [
    ["key_a", 0, 18],
    ["key_b", 4, 0],
    ["key_c", 9, 0],
  ],
  day: [
    ["2026-03-01", 8, 2],
    ["2026-03-02", 4, 0],
    ["2026-03-03", 1, 16],
  ],
  cache: [
    ["hit", 4, 2],
    ["none", 9, 16],
  ],
  byok: [
    ["byok", 8, 2],
    ["troupe", 5, 16],
  ],
};

t.test("grouped by each dimension: one group per value, live and test apart, sorted by key", async (t) => {
  t.strictSame([...groupByValues], ["category", "model", "environment", "key", "day", "cache", "byok"]);
  ledger.rows = mixed;
  for (const by of groupByValues) {
    const report = await usage(t, { group_by: by });
    t.equal(report.group_by, by);
    t.strictSame(callsByGroup(report), expectedGroups[by], by);
    t.equal(report.live.calls, 13, `${by}: the totals are the rows', not the groups'`);
    t.equal(report.test.calls, 18);
  }
});

t.test("many groups come sorted by key whatever the rows' order", async (t) => {
  // 100 keys in a scrambled order (37 is prime to 100): past V8's insertion sort for short arrays.
  const ids = Array.from({ length: 100 }, (_, i) => `key_${String((i * 37) % 100).padStart(3, "0")}`);
  ledger.rows = ids.map((api_key_id, i) => row({ api_key_id, calls: i + 1 }));
  const report = await usage(t, { group_by: "key" });
  const sorted = [...ids].sort();
  t.strictSame(
    report.groups.map((g) => g.key),
    sorted,
  );
  t.equal(report.groups[0]?.live.calls, ids.indexOf(sorted[0] ?? "") + 1, "each group keeps its own row");
});

t.test("without a budget: no limit, the default thresholds, soft, never updated; this month's spend in USD", async (t) => {
  t.strictSame(defaultThresholds, [0.5, 0.8, 1.0]);
  ledger.spentBy.set("2026-03", 1_234_567);
  const view = await reports.getBudget("usr_owner", bare.id);
  t.strictSame(budgetSchema.parse(view), view);
  t.strictSame(view, {
    project_id: bare.id,
    monthly_limit_usd: null,
    alert_thresholds: [0.5, 0.8, 1.0],
    hard_limit: false,
    updated_at: null,
    period: "2026-03",
    spent_usd: 0.001235,
  });
  t.same(ledger.spentAsked, [[bare.id, "2026-03"]]);
});

t.test("setting a budget: thresholds deduplicated and sorted, defaults for what is left out, stamped by the clock; read back as stored", async (t) => {
  clock.ms = Date.UTC(2026, 2, 20, 8, 30);
  ledger.spentBy.set("2026-03", 2500);
  const set = await reports.putBudget("usr_owner", project.id, { monthly_limit_usd: 12.5, alert_thresholds: [1, 0.5, 0.8, 0.5], hard_limit: true });
  const expected = {
    project_id: project.id,
    monthly_limit_usd: 12.5,
    alert_thresholds: [0.5, 0.8, 1],
    hard_limit: true,
    updated_at: "2026-03-20T08:30:00.000Z",
    period: "2026-03",
    spent_usd: 0.000003,
  };
  t.strictSame(set, expected);
  t.strictSame(await ledger.getBudget(project.id), { monthly_limit_usd: 12.5, alert_thresholds: [0.5, 0.8, 1], hard_limit: true, updated_at: "2026-03-20T08:30:00.000Z" }, "stored");

  clock.ms = Date.UTC(2026, 3, 2);
  ledger.spentBy.set("2026-04", 7_000_000_000);
  t.strictSame(await reports.getBudget("usr_admin", project.id), { ...expected, period: "2026-04", spent_usd: 7 }, "next month: the budget as stored, the new month's spend");
  t.same(ledger.spentAsked, [
    [project.id, "2026-03"],
    [project.id, "2026-04"],
  ]);

  const defaults = await reports.putBudget("usr_owner", project.id, { monthly_limit_usd: 3 });
  t.strictSame(defaults, { ...expected, monthly_limit_usd: 3, alert_thresholds: [0.5, 0.8, 1.0], hard_limit: false, updated_at: "2026-04-02T00:00:00.000Z", period: "2026-04", spent_usd: 7 });
  t.strictSame(await ledger.getBudget(project.id), { monthly_limit_usd: 3, alert_thresholds: [0.5, 0.8, 1.0], hard_limit: false, updated_at: "2026-04-02T00:00:00.000Z" });
  const soft = await reports.putBudget("usr_owner", project.id, { monthly_limit_usd: 3, alert_thresholds: [], hard_limit: false });
  t.strictSame(soft.alert_thresholds, [], "no thresholds at all is kept");
  t.equal(soft.hard_limit, false);
});

t.test("the schemas the routes publish: their fields and descriptions", async (t) => {
  const totals = usageTotalsSchema.shape;
  t.strictSame(Object.keys(totals), ["cost_usd", "cost_nanos", "calls", "input_tokens", "cached_input_tokens", "cache_write_input_tokens", "output_tokens", "units"]);
  t.equal(totals.cost_usd.description, "rounded to the micro-dollar");
  t.equal(totals.cost_nanos.description, "exact, in nano-dollars");
  t.equal(totals.cached_input_tokens.description, "of input_tokens, those read from a provider's prompt cache (billed at the model's cached price)");
  t.equal(totals.cache_write_input_tokens.description, "of input_tokens, those written to a prompt cache (billed at the model's cache-write price)");
  t.equal(totals.units.description, "per-unit categories: images, seconds, characters");
  t.strictSame(Object.keys(usageSchema.shape), ["project_id", "from", "to", "currency", "live", "test", "group_by", "groups"]);
  t.equal(usageSchema.shape.live.description, "billed: live keys");
  t.equal(usageSchema.shape.test.description, "unbilled: test keys (cost 0)");
  t.strictSame(Object.keys(budgetSchema.shape), ["project_id", "monthly_limit_usd", "alert_thresholds", "hard_limit", "updated_at", "period", "spent_usd"]);
  t.equal(budgetSchema.shape.period.description, "the current calendar month (UTC), YYYY-MM");
  t.equal(budgetSchema.shape.spent_usd.description, "live spend this period");
  t.notOk(usageSchema.safeParse({ ...(await usage(t, {})), currency: "EUR" }).success, "USD only");
  t.notOk(usageSchema.safeParse({ ...(await usage(t, {})), group_by: "region" }).success, "group_by is one of the dimensions");
});
