// One suite for both ledger stores (embedded lmdb, Redis): idempotent
// appends, exact integer sums, the budget admission rule, once-only alerts.
// `twin` (Redis) opens a second client on the same data, standing in for
// another replica.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Test } from "tap";
import type { UsageRecord } from "../../providers/usage.ts";
import type { LedgerStore, StoredBudget } from "../../tenancy/ledger.ts";
import { usageRecord } from "../support/usage-record.ts";

export interface LedgerTarget {
  name: string;
  create(): Promise<LedgerStore>;
  /** The same ledger opened again (after close for embedded; a second client for Redis). */
  reopen(store: LedgerStore): Promise<LedgerStore>;
  /** A second live client on the same data (another replica); Redis only. */
  twin?(store: LedgerStore): Promise<LedgerStore>;
}

/** A store kept in a directory (embedded, threaded): reopening closes it and opens the same directory again. */
export function directoryTarget(name: string, open: (dir: string) => LedgerStore): LedgerTarget {
  const dirs = new WeakMap<LedgerStore, string>();
  const opened = (dir: string) => {
    const store = open(dir);
    dirs.set(store, dir);
    return store;
  };
  return {
    name,
    create: async () => opened(mkdtempSync(join(tmpdir(), "troupe-ledger-"))),
    async reopen(store) {
      const dir = dirs.get(store);
      if (!dir) throw new Error("unknown store");
      await store.close();
      return opened(dir);
    },
  };
}

/** The suite's records; the ledger tests import it from here. */
export const usage = usageRecord;

const budget = (limitUsd: number, hard: boolean, thresholds = [0.5, 0.8, 1]): StoredBudget => ({
  monthly_limit_usd: limitUsd,
  alert_thresholds: thresholds,
  hard_limit: hard,
  updated_at: "2026-03-01T00:00:00.000Z",
});

export function ledgerSuite(t: Test, target: LedgerTarget): void {
  t.test(`${target.name}: a record is billed once, whatever the retries`, async (t) => {
    const ledger = await target.create();
    const once = usage({ project_id: "prj_idem" });
    await ledger.append([once, once]);
    await ledger.append([once]);
    // An agent turn: one request id, two calls told apart by their usage key.
    await ledger.append([usage({ project_id: "prj_idem", request_id: "turn_1", usage_key: "turn_1#0" }), usage({ project_id: "prj_idem", request_id: "turn_1", usage_key: "turn_1#1" })]);
    t.equal(await ledger.spent("prj_idem", "2026-03"), 3000, "three distinct calls, the replayed one counted once");
    const reopened = await target.reopen(ledger);
    await reopened.append([once]);
    t.equal(await reopened.spent("prj_idem", "2026-03"), 3000, "a replay after a restart is still a no-op");
    const rows = await reopened.usageRows("prj_idem", "2026-03", "2026-03");
    t.same(
      rows.map((r) => ({ day: r.day, calls: r.calls, cost: r.cost_nanos, live: r.live })),
      [{ day: "2026-03-15", calls: 3, cost: 3000, live: true }],
    );
    await reopened.close();
  });

  t.test(`${target.name}: sums are exact integers over 100,000 sub-micro-dollar records`, async (t) => {
    const ledger = await target.create();
    const records: UsageRecord[] = [];
    let exact = 0;
    let floats = 0;
    for (let i = 0; i < 100_000; i++) {
      const nanos = 150 + (i % 7) * 33; // 0.15–0.35 micro-dollars: what a few tokens of a small model cost
      exact += nanos;
      floats += nanos / 1e9;
      records.push(usage({ project_id: "prj_sum", cost_nanos: nanos, cost_usd: nanos / 1e9, live: i % 10 !== 0, environment_id: i % 2 ? "env_a" : "env_b" }));
    }
    for (let i = 0; i < records.length; i += 500) await ledger.append(records.slice(i, i + 500));
    const liveExact = records.filter((r) => r.live).reduce((s, r) => s + r.cost_nanos, 0);
    t.equal(await ledger.spent("prj_sum", "2026-03"), liveExact, "live spend to the nano-dollar");
    const rows = await ledger.usageRows("prj_sum", "2026-03", "2026-03");
    t.equal(
      rows.reduce((s, r) => s + r.cost_nanos, 0),
      exact,
      "aggregates add up exactly",
    );
    t.equal(rows.reduce((s, r) => s + r.calls, 0), 100_000);
    t.not(floats, exact / 1e9, "summing the same amounts as floats drifts (why the ledger counts integers)");
    const usageToDate = await ledger.usageToDate(["env_a", "env_b", "key_1"]);
    t.equal(usageToDate.get("env_a")!.calls + usageToDate.get("env_b")!.calls, 100_000);
    t.equal(usageToDate.get("key_1")!.cost_nanos, exact, "usage to date per key, exact");
    t.equal(usageToDate.get("env_a")!.last_used_at, "2026-03-15T10:00:00.000Z");
    await ledger.close();
  });

  t.test(`${target.name}: prompt-cache counts are summed in the rows and kept in the entries`, async (t) => {
    const ledger = await target.create();
    await ledger.append([
      usage({ project_id: "prj_cache", input_tokens: 2000, cached_input_tokens: 1024, cost_nanos: 3000 }),
      usage({ project_id: "prj_cache", input_tokens: 1500, cache_write_input_tokens: 1280, cost_nanos: 4000 }),
      usage({ project_id: "prj_cache", input_tokens: 10 }),
    ]);
    const rows = await ledger.usageRows("prj_cache", "2026-03", "2026-03");
    t.same(
      rows.map((r) => [r.calls, r.input_tokens, r.cached_input_tokens, r.cache_write_input_tokens, r.cost_nanos]),
      [[3, 3510, 1024, 1280, 8000]],
    );
    const records = (await ledger.records("prj_cache", "2026-03")).map((r) => [r.input_tokens, r.cached_input_tokens ?? 0, r.cache_write_input_tokens ?? 0]);
    t.same(records.sort((a, b) => a[0]! - b[0]!), [[10, 0, 0], [1500, 0, 1280], [2000, 1024, 0]], "each entry keeps its counts (none: read as 0)");
    await ledger.close();
  });

  t.test(`${target.name}: test records are kept apart and never spend the budget`, async (t) => {
    const ledger = await target.create();
    await ledger.append([usage({ project_id: "prj_test", live: false, cost_nanos: 0 }), usage({ project_id: "prj_test", cost_nanos: 7 })]);
    t.equal(await ledger.spent("prj_test", "2026-03"), 7);
    const rows = await ledger.usageRows("prj_test", "2026-03", "2026-03");
    t.same(rows.map((r) => [r.live, r.calls]).sort(), [[false, 1], [true, 1]]);
    await ledger.append([usage({ project_id: "prj_test", created_at: "2026-05-02T00:00:00.000Z" })]);
    t.equal((await ledger.usageRows("prj_test", "2026-04", "2026-05")).length, 1, "a range reads its months only");
    t.equal((await ledger.usageRows("prj_test", "0001-01", "9999-12")).length, 3, "any range");
    t.same(await ledger.usageRows("prj_test", "2026-06", "2026-01"), [], "an empty range");
    await ledger.close();
  });

  t.test(`${target.name}: fractional units (megapixels, seconds) are summed as integer millionths`, async (t) => {
    const ledger = await target.create();
    await ledger.append([usage({ project_id: "prj_units", category: "images", units: 1.048576 }), usage({ project_id: "prj_units", category: "images", units: 2.5 })]);
    const rows = await ledger.usageRows("prj_units", "2026-03", "2026-03");
    t.same(rows.map((r) => [r.calls, r.units_micro]), [[2, 3_548_576]]);
    await ledger.close();
  });

  t.test(`${target.name}: admits while spent + reserved < limit; settling swaps the reservation for the real cost`, async (t) => {
    const ledger = await target.create();
    const project = `prj_res_${target.name}_${Date.now()}`;
    const at = Date.UTC(2026, 2, 15);
    const res = (id: string) => ({ project_id: project, period: "2026-03", id });
    t.same(await ledger.reserve(res("free"), 10_000, at + 60_000, at), { admitted: true }, "no budget: nothing to check");
    await ledger.putBudget(project, budget(0.00001, true)); // 10,000 nano-dollars
    t.same(await ledger.reserve(res("a"), 6000, at + 60_000, at), { admitted: true });
    t.same(await ledger.reserve(res("b"), 6000, at + 60_000, at), { admitted: true }, "6,000 reserved < 10,000: admitted (may overshoot by one call)");
    t.match(await ledger.reserve(res("c"), 1, at + 60_000, at), { admitted: false, spent_nanos: 0, reserved_nanos: 12_000, limit_nanos: 10_000 });
    await ledger.append([usage({ project_id: project, cost_nanos: 2000, usage_key: "a" })], res("a"));
    await ledger.release(res("b"));
    t.same(await ledger.reserve(res("d"), 1, at + 60_000, at), { admitted: true }, "2,000 spent + 0 reserved: admitted");
    await ledger.append([usage({ project_id: project, cost_nanos: 8000, usage_key: "d" })], res("d"));
    t.match(await ledger.reserve(res("e"), 1, at + 60_000, at), { admitted: false, spent_nanos: 10_000, reserved_nanos: 0 }, "at the limit: refused");
    await ledger.putBudget(project, budget(0.00001, false));
    t.same(await ledger.reserve(res("f"), 1, at + 60_000, at), { admitted: true }, "hard limit off: admitted");
    await ledger.close();
  });

  t.test(`${target.name}: parts are admitted only when all of them fit, and are released one by one`, async (t) => {
    const ledger = await target.create();
    const project = `prj_parts_${target.name}_${Date.now()}`;
    const at = Date.UTC(2026, 2, 15);
    const place = { project_id: project, period: "2026-03" };
    const parts = (job: string, ...amounts: number[]) => amounts.map((amount_nanos, i) => ({ id: `${job}:${i}`, amount_nanos }));
    await ledger.putBudget(project, budget(0.00001, true)); // 10,000 nano-dollars
    t.same(await ledger.reserveParts(place, parts("a", 3000, 3000), at + 60_000, at, false), { admitted: true });
    t.match(await ledger.reserveParts(place, parts("b", 2000, 2001), at + 60_000, at, false), { admitted: false, reserved_nanos: 6000 }, "4,001 more does not fit in 4,000");
    t.same(await ledger.reserveParts(place, parts("c", 2000, 2000), at + 60_000, at, false), { admitted: true }, "exactly the rest fits");
    t.match(await ledger.reserve({ ...place, id: "call" }, 1, at + 60_000, at), { admitted: false, reserved_nanos: 10_000 }, "a call sees the parts held");
    await ledger.append([usage({ project_id: project, cost_nanos: 2500, usage_key: "a0" })]);
    await ledger.release({ ...place, id: "a:0" });
    await ledger.release({ ...place, id: "a:1" });
    await ledger.release({ ...place, id: "a:1" }); // twice: a no-op
    t.same(await ledger.reserveParts(place, parts("d", 3500), at + 60_000, at, false), { admitted: true }, "2,500 spent + 4,000 held + 3,500 = the limit");
    t.match(await ledger.reserveParts(place, parts("e", 0), at + 60_000, at, false), { admitted: false }, "at the limit even nothing fits");
    t.same(await ledger.reserveParts(place, parts("c", 2000, 2000), at + 60_000, at, true), { admitted: true }, "restoring parts still held changes nothing");
    await ledger.release({ ...place, id: "d:0" });
    t.same(await ledger.reserveParts(place, parts("f", 3500), at + 60_000, at, false), { admitted: true }, "c was not held twice");
    await ledger.close();
  });

  t.test(`${target.name}: a reservation of nothing (work admitted on what is spent) settles and releases`, async (t) => {
    const ledger = await target.create();
    const project = `prj_zero_${target.name}_${Date.now()}`;
    const at = Date.UTC(2026, 2, 15);
    const place = { project_id: project, period: "2026-03" };
    await ledger.putBudget(project, budget(0.00001, true));
    t.same(await ledger.reserve({ ...place, id: "zero" }, 0, at + 60_000, at), { admitted: true });
    t.same(await ledger.append([], { ...place, id: "zero" }), [], "settled without a record");
    t.same(await ledger.reserveParts(place, [{ id: "z:0", amount_nanos: 0 }], at + 60_000, at, false), { admitted: true });
    await ledger.release({ ...place, id: "z:0" });
    t.same(await ledger.reserveParts(place, [{ id: "full", amount_nanos: 10_000 }], at + 60_000, at, false), { admitted: true }, "nothing left held");
    await ledger.close();
  });

  t.test(`${target.name}: restored parts are held without a check`, async (t) => {
    const ledger = await target.create();
    const project = `prj_restore_${target.name}_${Date.now()}`;
    const at = Date.UTC(2026, 2, 15);
    const place = { project_id: project, period: "2026-03" };
    await ledger.putBudget(project, budget(0.00001, true));
    await ledger.append([usage({ project_id: project, cost_nanos: 9000, usage_key: "spent" })]);
    t.same(await ledger.reserveParts(place, [{ id: "j:0", amount_nanos: 5000 }], at + 60_000, at, true), { admitted: true }, "a job admitted before a restart keeps its hold");
    t.match(await ledger.reserve({ ...place, id: "call" }, 1, at + 60_000, at), { admitted: false, spent_nanos: 9000, reserved_nanos: 5000 });
    await ledger.close();
  });

  t.test(`${target.name}: a reservation of a call that never settles expires`, async (t) => {
    const ledger = await target.create();
    const project = `prj_exp_${target.name}_${Date.now()}`;
    const at = Date.UTC(2026, 2, 15);
    await ledger.putBudget(project, budget(0.00001, true));
    const res = (id: string) => ({ project_id: project, period: "2026-03", id });
    t.same(await ledger.reserve(res("lost"), 50_000, at + 1000, at), { admitted: true });
    t.match(await ledger.reserve(res("x"), 1, at + 1000, at + 999), { admitted: false });
    t.same(await ledger.reserve(res("y"), 1, at + 5000, at + 1000), { admitted: true }, "the dead replica's reservation has expired");
    await ledger.close();
  });

  t.test(`${target.name}: each threshold alerts once per period`, async (t) => {
    const ledger = await target.create();
    const project = `prj_alert_${target.name}_${Date.now()}`;
    await ledger.putBudget(project, budget(0.00001, false)); // marks at 5,000 / 8,000 / 10,000
    const bill = (nanos: number, created_at = "2026-03-15T10:00:00.000Z") => ledger.append([usage({ project_id: project, cost_nanos: nanos, created_at })]);
    t.same(await bill(4999), []);
    t.match(await bill(1), [{ project_id: project, organization_id: "org_1", period: "2026-03", threshold: 0.5, limit_nanos: 10_000, spent_nanos: 5000 }]);
    t.same(await bill(1000), []);
    t.same((await bill(5000)).map((a) => a.threshold), [0.8, 1], "one append crossing two thresholds alerts both");
    t.same(await bill(5000), [], "never again this period");
    t.same((await bill(6000, "2026-04-01T00:00:00.000Z")).map((a) => a.threshold), [0.5], "a new period starts over");
    t.same(await bill(0, "2026-03-20T00:00:00.000Z"), []);
    const pending = await ledger.pendingAlerts();
    t.same(pending.filter((a) => a.project_id === project).length, 4, "claimed alerts are pending until acknowledged");
    for (const a of pending) await ledger.ackAlert(a);
    t.same((await ledger.pendingAlerts()).filter((a) => a.project_id === project), []);
    await ledger.close();
  });

  // The usage recorder flushes records of many projects in one append; a
  // cluster runs one script per project (each project is its own slot).
  t.test(`${target.name}: one append of several projects settles, alerts and counts each`, async (t) => {
    const ledger = await target.create();
    const [p1, p2] = [`prj_multi_a_${Date.now()}`, `prj_multi_b_${Date.now()}`];
    await ledger.putBudget(p1, budget(0.00001, true)); // marks at 5,000 / 8,000 / 10,000
    await ledger.putBudget(p2, budget(0.00001, false));
    const at = Date.UTC(2026, 2, 15);
    const reservation = { project_id: p1, period: "2026-03", id: "rsv_multi" };
    t.same(await ledger.reserve(reservation, 9000, at + 60_000, at), { admitted: true });
    const key = `key_multi_${Date.now()}`;
    const alerts = await ledger.append(
      [usage({ project_id: p1, api_key_id: key, cost_nanos: 5000 }), usage({ project_id: p2, api_key_id: key, cost_nanos: 8000 }), usage({ project_id: p2, api_key_id: key, cost_nanos: 1 })],
      reservation,
    );
    t.same(alerts.map((a) => `${a.project_id === p1 ? "a" : "b"}:${a.threshold}`).sort(), ["a:0.5", "b:0.5", "b:0.8"], "each project's thresholds");
    t.equal(await ledger.spent(p1, "2026-03"), 5000);
    t.equal(await ledger.spent(p2, "2026-03"), 8001);
    // An append without a reservation resolves once durable (embedded: after the commit that also holds the one above).
    await ledger.append([usage({ project_id: p2, api_key_id: key, cost_nanos: 1 })]);
    t.equal((await ledger.records(p2, "2026-03")).length, 3);
    t.same(await ledger.reserve({ ...reservation, id: "rsv_after" }, 4999, at + 60_000, at), { admitted: true }, "the settled reservation no longer holds the budget");
    const toDate = (await ledger.usageToDate([key])).get(key);
    t.equal(toDate?.cost_nanos, 13_002, "a key's usage to date sums over projects");
    t.equal(toDate?.calls, 4);
    const pending = (await ledger.pendingAlerts()).filter((a) => a.project_id === p1 || a.project_id === p2);
    t.equal(pending.length, 3, "both projects' alerts pending");
    for (const a of pending) await ledger.ackAlert(a);
    t.same((await ledger.pendingAlerts()).filter((a) => a.project_id === p1 || a.project_id === p2), [], "acknowledged");
    await ledger.close();
  });

  const twin = target.twin;
  if (twin) {
    t.test(`${target.name}: two replicas racing — alerts once, the limit holds`, async (t) => {
      const a = await target.create();
      const b = await twin(a);
      const project = `prj_race_${Date.now()}`;
      await a.putBudget(project, budget(0.0001, true)); // 100,000 nano-dollars
      const alerts = await Promise.all(
        Array.from({ length: 200 }, (_, i) => (i % 2 ? a : b).append([usage({ project_id: project, cost_nanos: 1000 })])),
      );
      t.same(alerts.flat().map((x) => x.threshold).sort(), [0.5, 0.8, 1], "each threshold once across both replicas");
      const p2 = `prj_race2_${Date.now()}`;
      await a.putBudget(p2, budget(0.00001, true));
      const at = Date.UTC(2026, 2, 15);
      const outcomes = await Promise.all(
        Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).reserve({ project_id: p2, period: "2026-03", id: `r${i}` }, 3000, at + 60_000, at)),
      );
      t.equal(outcomes.filter((o) => o.admitted).length, 4, "0+3000+6000+9000 < 10,000: exactly four admitted, whoever asks");
      await b.close();
      await a.close();
    });
  }
}
