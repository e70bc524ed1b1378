// Billing's job holds and settles over a real embedded ledger, in process, on
// an injected clock: the parts a video job holds (in which budgets, at what
// amounts, for how long), their restore and release, a refusal by either
// budget, the budget cache's ten seconds, and a settle or bill releasing what
// it should. Found open by mutation testing (docs/testing.md); the ledger's
// own rules are the ledger tests'.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import { rejectedWith } from "../support/thrown-by.ts";
import type { Clock } from "../../core/clock.ts";
import { createLogger } from "../../core/log.ts";
import type { OrganizationEvent } from "../../core/organization-events.ts";
import { BothBudgets, Billing } from "../../tenancy/billing.ts";
import { LeaseTicket } from "../../tenancy/budget-leases.ts";
import { EmbeddedDataStore } from "../../tenancy/embedded-data-store.ts";
import { EmbeddedLedgerStore } from "../../tenancy/embedded-ledger-store.ts";
import type { StoredBudget } from "../../tenancy/ledger.ts";
import { usageRecord } from "../support/usage-record.ts";

const startMs = Date.UTC(2026, 2, 15, 12);
const day = 24 * 3_600_000;
const log = createLogger("silent");

/** 10,000 nano-dollars a month. */
const budget = (hard: boolean): StoredBudget => ({ monthly_limit_usd: 0.00001, alert_thresholds: [], hard_limit: hard, updated_at: "2026-03-01T00:00:00.000Z" });

interface Setup {
  billing: Billing;
  ledger: EmbeddedLedgerStore;
  clock: Clock & { ms: number };
  published: OrganizationEvent[];
}

function setup(t: Test): Setup {
  const dir = mkdtempSync(join(tmpdir(), "troupe-billing-unit-"));
  const clock = { ms: startMs, now: () => clock.ms };
  const store = new EmbeddedDataStore(dir, clock);
  const ledger = new EmbeddedLedgerStore(dir, { now: clock.now });
  const published: OrganizationEvent[] = [];
  const events = { publish: async (event: OrganizationEvent) => void published.push(event) };
  const billing = new Billing({ ledger, store, clock, log, events });
  t.teardown(async () => {
    await billing.stop();
    await ledger.close();
    await store.close();
  });
  return { billing, ledger, clock, published };
}

const payer = (project_id: string, live = true) => ({ organization_id: "org_1", project_id, environment_id: "env_1", api_key_id: `key_${project_id}`, live });

/** Whether the budget admits one more nano-dollar's call at `nowMs`: what is held there, seen from the ledger. */
async function room(ledger: EmbeddedLedgerStore, project_id: string, nowMs: number, api_key_id?: string) {
  return ledger.reserve({ project_id, period: "2026-03", id: `probe_${nowMs}_${Math.random()}`, ...(api_key_id ? { api_key_id } : {}) }, 0, nowMs + 1, nowMs);
}

t.test("nothing is held for a test key or a project without a hard limit", async (t) => {
  const { billing, ledger } = setup(t);
  t.equal(await billing.reserveParts(payer("prj_free"), "job1", [5000]), undefined, "no budget");
  await ledger.putBudget("prj_soft", budget(false));
  t.equal(await billing.reserveParts(payer("prj_soft"), "job1", [50_000]), undefined, "no hard limit");
  await ledger.putBudget("prj_test", budget(true));
  t.equal(await billing.reserveParts(payer("prj_test", false), "job1", [50_000]), undefined, "a test key");
  t.same(await room(ledger, "prj_test", startMs), { admitted: true }, "nothing held for it");
});

t.test("a hard-limited project's job holds each part, rounded up to whole nano-dollars, for 24 hours", async (t) => {
  const { billing, ledger } = setup(t);
  await ledger.putBudget("prj_hard", budget(true));
  const held = await billing.reserveParts(payer("prj_hard"), "job1", [2999.2, -5, 7000]);
  t.same(held, {
    project_id: "prj_hard",
    period: "2026-03",
    parts: [
      { id: "job1:0", amount_nanos: 3000 },
      { id: "job1:1", amount_nanos: 0 },
      { id: "job1:2", amount_nanos: 7000 },
    ],
  });
  t.same(await room(ledger, "prj_hard", startMs + day - 1), { admitted: false, spent_nanos: 0, reserved_nanos: 10_000, limit_nanos: 10_000 }, "held to a millisecond before 24 hours");
  t.same(await room(ledger, "prj_hard", startMs + day), { admitted: true }, "expired at 24 hours");
});

t.test("a job that does not fit is refused with what it needed", async (t) => {
  const { billing, ledger } = setup(t);
  await ledger.putBudget("prj_full", budget(true));
  await ledger.append([usageRecord({ project_id: "prj_full", cost_nanos: 4000, usage_key: "spent" })]);
  const error = await rejectedWith(billing.reserveParts(payer("prj_full"), "job1", [3000, 3001]));
  t.equal(error.code, "budget_exceeded");
  t.match(error.details, { limit_usd: 0.00001, spent_usd: 0.000004, reserved_usd: 0, required_usd: 0.000006, period: "2026-03" });
  t.same(await room(ledger, "prj_full", startMs), { admitted: true }, "nothing held");
  t.ok(await billing.reserveParts(payer("prj_full"), "job2", [3000, 3000]), "exactly the rest fits");
});

t.test("a key's budget holds the job's parts too, only when asked, and the project need not be limited", async (t) => {
  const { billing, ledger } = setup(t);
  const p = payer("prj_key");
  await ledger.putBudget("prj_key", budget(true), p.api_key_id);
  t.equal(await billing.reserveParts(p, "job0", [5000]), undefined, "without keyBudget the key's budget is not the caller's to settle");
  const held = await billing.reserveParts(p, "job1", [6000], { keyBudget: true });
  t.same(held, { project_id: "prj_key", period: "2026-03", parts: [{ id: "job1:0", amount_nanos: 6000 }], api_key_id: p.api_key_id, project: false });
  t.same(await room(ledger, "prj_key", startMs, p.api_key_id), { admitted: true });
  const error = await rejectedWith(billing.reserveParts(p, "job2", [4001], { keyBudget: true }));
  t.match(error.details, { budget: "api_key", api_key_id: p.api_key_id, reserved_usd: 0.000006, required_usd: 0.000004 });
  if (!held) return;
  await billing.releaseParts(held, ["job1:0"]);
  t.ok(await billing.reserveParts(p, "job3", [10_000], { keyBudget: true }), "released from the key's budget");
});

t.test("under both budgets a refusal by the project releases the key's holds", async (t) => {
  const { billing, ledger } = setup(t);
  const p = payer("prj_both");
  await ledger.putBudget("prj_both", budget(true));
  await ledger.putBudget("prj_both", budget(true), p.api_key_id);
  await ledger.append([usageRecord({ project_id: "prj_both", api_key_id: "key_other", cost_nanos: 5000, usage_key: "spent" })]);
  const error = await rejectedWith(billing.reserveParts(p, "job1", [6000], { keyBudget: true }));
  t.match(error.details, { spent_usd: 0.000005, required_usd: 0.000006 });
  t.notOk((error.details as { budget?: string }).budget, "the project's budget refused it");
  t.same(await room(ledger, "prj_both", startMs + 1, p.api_key_id), { admitted: true });
  t.ok(await billing.reserveParts({ ...p, project_id: "prj_both" }, "job2", [5000], { keyBudget: true }), "5,000 fits both");
  const again = await rejectedWith(billing.reserveParts(p, "job3", [5001], { keyBudget: true }));
  t.match(again.details, { budget: "api_key", reserved_usd: 0.000005 }, "the key's 10,000 holds job2's 5,000, not job1's 6,000 too");
});

t.test("restoring a job's parts holds them again in each of its budgets; releasing frees each", async (t) => {
  const { billing, ledger } = setup(t);
  const p = payer("prj_restore");
  await ledger.putBudget("prj_restore", budget(true));
  await ledger.putBudget("prj_restore", budget(true), p.api_key_id);
  const held = await billing.reserveParts(p, "job1", [4000, 6000], { keyBudget: true });
  if (!held) return t.fail("held");
  await billing.releaseParts(held, ["job1:0", "job1:1"]);
  t.same(await room(ledger, "prj_restore", startMs), { admitted: true }, "released in the project's budget");
  t.same(await room(ledger, "prj_restore", startMs, p.api_key_id), { admitted: true }, "and in the key's");
  await billing.restoreParts(held, held.parts);
  t.same(await room(ledger, "prj_restore", startMs + day - 1), { admitted: false, spent_nanos: 0, reserved_nanos: 10_000, limit_nanos: 10_000 }, "restored for 24 hours");
  t.same(await room(ledger, "prj_restore", startMs + day - 1, p.api_key_id), { admitted: false, spent_nanos: 0, reserved_nanos: 10_000, limit_nanos: 10_000 });
  t.same(await room(ledger, "prj_restore", startMs + day), { admitted: true });
});

t.test("the budget is read again after ten seconds, and at once after a change through billing", async (t) => {
  const { billing, ledger, clock } = setup(t);
  await ledger.putBudget("prj_cache", budget(false));
  t.equal(await billing.reserveParts(payer("prj_cache"), "a", [1]), undefined);
  await ledger.putBudget("prj_cache", budget(true)); // behind billing's back: no broadcast
  clock.ms = startMs + 9_999;
  t.equal(await billing.reserveParts(payer("prj_cache"), "b", [1]), undefined, "cached for under ten seconds");
  clock.ms = startMs + 10_000;
  t.ok(await billing.reserveParts(payer("prj_cache"), "c", [1]), "read again at ten seconds");
  await billing.putBudget("prj_cache", budget(false));
  t.equal(await billing.reserveParts(payer("prj_cache"), "d", [1]), undefined, "a change through billing is seen at once");
  // The key's budget is cached the same way.
  const p = payer("prj_cache");
  await ledger.putBudget("prj_cache", budget(false), p.api_key_id);
  t.equal(await billing.reserveParts(p, "e", [1], { keyBudget: true }), undefined);
  await ledger.putBudget("prj_cache", budget(true), p.api_key_id);
  clock.ms = startMs + 19_999;
  t.equal(await billing.reserveParts(p, "f", [1], { keyBudget: true }), undefined, "the key's cached for under ten seconds");
  clock.ms = startMs + 20_000;
  t.ok(await billing.reserveParts(p, "g", [1], { keyBudget: true }), "and read again at ten seconds");
});

t.test("a settle bills the record and releases its reservation; of both budgets, both", async (t) => {
  const { billing, ledger } = setup(t);
  const p = payer("prj_settle");
  await ledger.putBudget("prj_settle", budget(true));
  await ledger.putBudget("prj_settle", budget(true), p.api_key_id);
  const place = { project_id: "prj_settle", period: "2026-03" };
  const project = { ...place, id: "r1" };
  const key = { ...place, api_key_id: p.api_key_id, id: "r1k" };
  t.same(await ledger.reserve(project, 6000, startMs + day, startMs), { admitted: true });
  t.same(await ledger.reserve(key, 6000, startMs + day, startMs), { admitted: true });
  await billing.settle(new BothBudgets(project, key), usageRecord({ project_id: "prj_settle", api_key_id: p.api_key_id, cost_nanos: 1000, usage_key: "r1" }));
  t.equal(await ledger.spent("prj_settle", "2026-03"), 1000, "billed once");
  t.equal(await ledger.spent("prj_settle", "2026-03", p.api_key_id), 1000);
  t.same(await room(ledger, "prj_settle", startMs), { admitted: true });
  t.same(await ledger.reserve({ ...place, id: "r2" }, 9000, startMs + day, startMs), { admitted: true }, "the project's 6,000 released");
  t.same(await ledger.reserve({ ...key, id: "r2k" }, 9000, startMs + day, startMs), { admitted: true }, "the key's 6,000 released");
  await billing.settle({ ...place, id: "r2" }, undefined);
  t.equal(await ledger.spent("prj_settle", "2026-03"), 1000, "a call without usage bills nothing");
  t.same(await room(ledger, "prj_settle", startMs), { admitted: true }, "and releases its reservation");
  t.same(await room(ledger, "prj_settle", startMs, p.api_key_id), { admitted: false, spent_nanos: 1000, reserved_nanos: 9000, limit_nanos: 10_000 }, "the key's own still held");
});

t.test("bill releases the parts it settles, one or several", async (t) => {
  const { billing, ledger } = setup(t);
  const p = payer("prj_bill");
  await ledger.putBudget("prj_bill", budget(true));
  await ledger.putBudget("prj_bill", budget(true), p.api_key_id);
  const held = await billing.reserveParts(p, "job1", [4000, 4000], { keyBudget: true });
  if (!held) return t.fail("held");
  const [first, second] = held.parts.map((part) => part.id);
  if (!first || !second) return t.fail("two parts");
  const place = { project_id: "prj_bill", period: "2026-03" };
  await billing.bill(usageRecord({ project_id: "prj_bill", api_key_id: p.api_key_id, cost_nanos: 1000, usage_key: "seg0" }), { ...place, id: first });
  t.same(await room(ledger, "prj_bill", startMs), { admitted: true });
  t.same(await rejectedWith(billing.reserveParts(payer("prj_bill"), "probe", [5001])).then((e) => e.details), { limit_usd: 0.00001, spent_usd: 0.000001, reserved_usd: 0.000004, period: "2026-03", required_usd: 0.000005 }, "the project's first part released, its second held");
  await billing.bill(usageRecord({ project_id: "prj_bill", api_key_id: p.api_key_id, cost_nanos: 1000, usage_key: "seg1" }), [
    { ...place, id: second },
    { ...place, api_key_id: p.api_key_id, id: first },
    { ...place, api_key_id: p.api_key_id, id: second },
  ]);
  t.equal(await ledger.spent("prj_bill", "2026-03"), 2000);
  t.ok(await billing.reserveParts(p, "job2", [8000], { keyBudget: true }), "every part released in both budgets");
  await billing.bill(usageRecord({ project_id: "prj_bill", cost_nanos: 1000, usage_key: "seg2" }));
  t.equal(await ledger.spent("prj_bill", "2026-03"), 3000, "a bill without parts bills");
});

t.test("a restore holds the parts even when they would not fit now", async (t) => {
  const { billing, ledger } = setup(t);
  await ledger.putBudget("prj_late", budget(true));
  const held = await billing.reserveParts(payer("prj_late"), "job1", [6000]);
  if (!held) return t.fail("held");
  await billing.releaseParts(held, ["job1:0"]);
  await ledger.append([usageRecord({ project_id: "prj_late", cost_nanos: 9000, usage_key: "spent" })]);
  await billing.restoreParts(held, held.parts);
  t.same(await room(ledger, "prj_late", startMs), { admitted: false, spent_nanos: 9000, reserved_nanos: 6000, limit_nanos: 10_000 }, "held again over the limit");
});

t.test("a key-only job holds nothing in a project that became hard-limited within the cache's ten seconds", async (t) => {
  const { billing, ledger } = setup(t);
  const p = payer("prj_stale");
  await ledger.putBudget("prj_stale", budget(false));
  await ledger.putBudget("prj_stale", budget(true), p.api_key_id);
  t.ok(await billing.reserveParts(p, "job0", [1], { keyBudget: true }));
  await ledger.putBudget("prj_stale", budget(true)); // behind billing's back: its cache still says no hard limit
  const held = await billing.reserveParts(p, "job1", [4000], { keyBudget: true });
  t.equal(held?.project, false, "held against the key's budget only");
  t.same(
    await ledger.reserveParts({ project_id: "prj_stale", period: "2026-03" }, [{ id: "all", amount_nanos: 10_000 }], startMs + 1, startMs, false),
    { admitted: true },
    "nothing is held in the project's budget, where the job's release would never look",
  );
});

t.test("a settle of a call that reserved on its own publishes the alerts its append crossed", async (t) => {
  const { billing, ledger, published } = setup(t);
  await ledger.putBudget("prj_alert", { ...budget(true), alert_thresholds: [0.5] });
  const reservation = { project_id: "prj_alert", period: "2026-03", id: "r1" };
  t.same(await ledger.reserve(reservation, 6000, startMs + day, startMs), { admitted: true });
  await billing.settle(reservation, usageRecord({ project_id: "prj_alert", cost_nanos: 6000, usage_key: "r1" }));
  t.match(published, [{ type: "budget.alert", project_id: "prj_alert", data: { threshold: 0.5, spent_usd: 0.000006 } }]);
  t.equal(published.length, 1);
});

// $0.001 a month: a call's first admission takes a lease of an eighth of it (125,000 nano-dollars) on this replica.
const leaseBudget = (): StoredBudget => ({ ...budget(true), monthly_limit_usd: 0.001 });

t.test("a job refused for money this replica's idle lease holds is admitted once the lease is returned", async (t) => {
  const { billing, ledger } = setup(t);
  await ledger.putBudget("prj_lease", leaseBudget());
  const ticket = await billing.admit(payer("prj_lease"), () => 1000);
  if (!(ticket instanceof LeaseTicket)) return t.fail("admitted from a lease");
  await billing.settle(ticket, usageRecord({ project_id: "prj_lease", cost_nanos: 1000, usage_key: "call1" }));
  t.equal(await ledger.spent("prj_lease", "2026-03"), 0, "a lease's call settles in memory, not in the ledger");
  t.ok(await billing.reserveParts(payer("prj_lease"), "small", [1000]), "fits beside the lease");
  t.equal(await ledger.spent("prj_lease", "2026-03"), 0, "the lease was not returned for a job that fitted");
  t.ok(await billing.reserveParts(payer("prj_lease"), "job1", [900_000]), "1,000 + 125,000 + 900,000 > 1,000,000: admitted after the lease went back");
  t.equal(await ledger.spent("prj_lease", "2026-03"), 1000, "the lease's return billed its call");
  t.same(
    await ledger.reserveParts({ project_id: "prj_lease", period: "2026-03" }, [{ id: "probe", amount_nanos: 98_001 }], startMs + day, startMs + day - 1, false),
    { admitted: false, spent_nanos: 1000, reserved_nanos: 901_000, limit_nanos: 1_000_000 },
    "the job admitted on the second ask is held for 24 hours too",
  );
});

t.test("a job that does not fit even after the idle lease went back is refused", async (t) => {
  const { billing, ledger } = setup(t);
  await ledger.putBudget("prj_lease2", leaseBudget());
  const ticket = await billing.admit(payer("prj_lease2"), () => 1000);
  if (!(ticket instanceof LeaseTicket)) return t.fail("admitted from a lease");
  await billing.settle(ticket, usageRecord({ project_id: "prj_lease2", cost_nanos: 1000, usage_key: "call1" }));
  const error = await rejectedWith(billing.reserveParts(payer("prj_lease2"), "job1", [999_001]));
  t.match(error.details, { spent_usd: 0.000001, reserved_usd: 0, required_usd: 0.000999 });
  t.same(await room(ledger, "prj_lease2", startMs), { admitted: true }, "nothing held");
});

t.test("a key's idle lease is returned for its job too, and its call settles in the key's lease", async (t) => {
  const { billing, ledger } = setup(t);
  const p = payer("prj_klease");
  await ledger.putBudget("prj_klease", leaseBudget(), p.api_key_id);
  const ticket = await billing.admit(p, () => 1000);
  if (!(ticket instanceof LeaseTicket)) return t.fail("admitted from a lease");
  t.equal(ticket.api_key_id, p.api_key_id);
  await billing.settle(ticket, usageRecord({ project_id: "prj_klease", api_key_id: p.api_key_id, cost_nanos: 1000, usage_key: "call1" }));
  t.equal(await ledger.spent("prj_klease", "2026-03", p.api_key_id), 0, "settled in memory");
  t.ok(await billing.reserveParts(p, "job1", [900_000], { keyBudget: true }), "admitted after the key's lease went back");
  t.equal(await ledger.spent("prj_klease", "2026-03", p.api_key_id), 1000, "the key's lease's return billed its call");
});
