// Budget leases (tenancy/budget-leases.ts) on an injected clock, against an
// in-memory ledger that records every step and answers as told: the exact
// instants a lease stops admitting and renews (boundary − 1, boundary,
// boundary + 1), its size and the refused sizes tried after, the back-off
// after a refusal, holds(), returnIdle(), forget(), close(), cancel(), the
// return's chunks and its retry after a ledger failure. Fast on purpose: the
// mutation run (stryker.config.json) runs this file once per mutant, before
// the slower two-replica budget-leases.test.ts.
import t from "tap";
import type { LogFields, Logger } from "../../core/log.ts";
import type { UsageRecord } from "../../providers/usage.ts";
import { BudgetLeases, leaseMaxAgeMs, type BudgetPlace, type LeaseTicket } from "../../tenancy/budget-leases.ts";
import type { BudgetAlert, LedgerStore, Reservation, ReservedPart, ReserveOutcome } from "../../tenancy/ledger.ts";
import { usageRecord } from "../support/usage-record.ts";

const monthEnd = Date.UTC(2026, 3, 1);
const t0 = Date.UTC(2026, 2, 15, 12);
const estimate = 1_000;
const bigLimit = 1_000_000_000; // a lease of 256 estimates (256 000), far under an eighth of it
const place: BudgetPlace = { project_id: "prj_a", api_key_id: undefined };

interface ReserveStep {
  place: Omit<Reservation, "id">;
  parts: ReservedPart[];
  expiresAt: number;
  now: number;
  restore: boolean;
}
interface AppendStep {
  ids: string[];
  settle: Reservation | undefined;
}

/** The ledger steps a BudgetLeases takes; answers from `outcomes` (admitted once they run out), fails appends while `failAppends` > 0. */
class RecordingLedger {
  reserves: ReserveStep[] = [];
  appends: AppendStep[] = [];
  outcomes: (ReserveOutcome | Error)[] = [];
  failAppends = 0;
  alertsPerAppend: BudgetAlert[][] = [];

  asLedger(): LedgerStore {
    const reserveParts = (where: Omit<Reservation, "id">, parts: ReservedPart[], expiresAt: number, now: number, restore: boolean): Promise<ReserveOutcome> => {
      this.reserves.push({ place: where, parts, expiresAt, now, restore });
      const outcome = this.outcomes.shift() ?? { admitted: true };
      return outcome instanceof Error ? Promise.reject(outcome) : Promise.resolve(outcome);
    };
    const append = (records: UsageRecord[], settle?: Reservation): Promise<BudgetAlert[]> => {
      this.appends.push({ ids: records.map((r) => r.usage_key), settle });
      if (this.failAppends > 0) {
        this.failAppends -= 1;
        return Promise.reject(new Error("the ledger is away"));
      }
      return Promise.resolve(this.alertsPerAppend.shift() ?? []);
    };
    const partial: Pick<LedgerStore, "kind" | "reserveParts" | "append"> = { kind: "embedded", reserveParts, append };
    return partial as LedgerStore;
  }
}

interface Fixture {
  leases: BudgetLeases;
  ledger: RecordingLedger;
  clock: { ms: number; now(): number };
  warnings: { msg: string; fields: LogFields | undefined }[];
  published: BudgetAlert[][];
}

/** `settleTicks`: how many macrotask turns writesSettled takes (a return that is not awaited has not landed). */
function fixture(opts: { chunk?: number; holdTtlMs?: number; settleTicks?: number; now?: number } = {}): Fixture {
  const ledger = new RecordingLedger();
  const clock = { ms: opts.now ?? t0, now: () => clock.ms };
  const warnings: Fixture["warnings"] = [];
  const published: BudgetAlert[][] = [];
  const log: Logger = {
    debug: () => undefined,
    info: () => undefined,
    warn: (msg, fields) => warnings.push({ msg, fields }),
    error: () => undefined,
    child: () => log,
    enabled: () => true,
  };
  const ticks = opts.settleTicks ?? 0;
  const leases = new BudgetLeases({
    ledger: ledger.asLedger(),
    clock,
    log,
    holdTtlMs: opts.holdTtlMs ?? 60_000,
    chunk: opts.chunk ?? 100,
    publishAlerts: (alerts) => {
      published.push(alerts);
      return Promise.resolve();
    },
    writesSettled: async () => {
      for (let i = 0; i < ticks; i++) await new Promise((resolve) => setImmediate(resolve));
    },
  });
  return { leases, ledger, clock, warnings, published };
}

/** Lets the returns and acquisitions in flight run (they await nothing slower than setImmediate). */
async function turns(n = 5): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
}

function at<T>(list: readonly T[], i: number): T {
  const item = list[i];
  if (item === undefined) throw new Error(`nothing at ${i}`);
  return item;
}

function must(ticket: LeaseTicket | undefined): LeaseTicket {
  if (!ticket) throw new Error("no ticket");
  return ticket;
}

const record = (cost: number): UsageRecord => usageRecord({ project_id: place.project_id, cost_nanos: cost });

t.test("a lease's size, its ledger step, its times and its tickets' ids", async (t) => {
  const { leases, ledger } = fixture();
  t.equal(leases.take(place, estimate, t0), undefined, "no lease yet: take answers undefined without a ledger step");
  const first = must(await leases.takeWithNewLease(place, estimate, bigLimit, t0));
  t.equal(ledger.reserves.length, 1);
  const step = at(ledger.reserves, 0);
  t.same(step.place, { project_id: "prj_a", period: "2026-03" }, "a project's lease: no api_key_id in the place");
  t.notOk("api_key_id" in step.place);
  t.equal(step.parts.length, 1);
  t.match(at(step.parts, 0).id, /^lse_[0-9A-Z]{26}$/);
  t.equal(at(step.parts, 0).amount_nanos, 256 * estimate, "256 estimates");
  t.equal(step.expiresAt, t0 + 60_000, "held for holdTtlMs");
  t.equal(step.now, t0);
  t.equal(step.restore, false);
  const lease = first.lease;
  t.equal(lease.amount, 256 * estimate);
  t.equal(lease.admitsUntil, t0 + leaseMaxAgeMs);
  t.equal(lease.renewAt, t0 + 750);
  t.equal(lease.expiresAt, t0 + 60_000);
  t.equal(lease.reservation.id, at(step.parts, 0).id);
  t.equal(first.id, `${at(step.parts, 0).id}:1`);
  t.equal(first.project_id, "prj_a");
  t.equal(first.api_key_id, undefined);
  t.equal(first.period, "2026-03");
  t.equal(first.estimate, estimate);
  const second = must(await leases.takeWithNewLease(place, estimate, bigLimit, t0 + 1));
  t.equal(second.lease, lease, "a lease that fits is used: no second ledger step");
  t.equal(second.id, `${at(step.parts, 0).id}:2`);
  t.equal(ledger.reserves.length, 1);
  t.equal(lease.used, 2 * estimate);
  t.equal(lease.inFlight, 2);
  t.equal(lease.timer?.hasRef(), false, "the lease's own timer keeps no process alive");
  t.equal(leases.take({ project_id: "prj_other", api_key_id: undefined }, estimate, t0), undefined, "another project has no lease");
  await leases.close();
});

t.test("a key's own lease reserves in the key's place, apart from its project's", async (t) => {
  const { leases, ledger } = fixture();
  const key: BudgetPlace = { project_id: "prj_a", api_key_id: "key_1" };
  const ticket = must(await leases.takeWithNewLease(key, estimate, bigLimit, t0));
  t.same(at(ledger.reserves, 0).place, { project_id: "prj_a", api_key_id: "key_1", period: "2026-03" });
  t.equal(ticket.api_key_id, "key_1");
  t.equal(leases.take(place, estimate, t0), undefined, "the project's own budget has no lease");
  t.ok(leases.holds(key));
  t.notOk(leases.holds(place));
  await leases.close();
});

t.test("a lease admits until admitsUntil − 1 and stops at admitsUntil; its return waits for the calls in flight", async (t) => {
  const { leases, ledger } = fixture();
  const a = must(await leases.takeWithNewLease(place, estimate, bigLimit, t0));
  // Renewal is refused far below the minimum, so this lease stays current to its end.
  ledger.outcomes.push({ admitted: false, limit_nanos: 4_000, spent_nanos: 0, reserved_nanos: 0 });
  const b = must(leases.take(place, estimate, t0 + leaseMaxAgeMs - 1));
  t.equal(b.lease, a.lease, "boundary − 1 still admits");
  await turns();
  t.equal(leases.take(place, estimate, t0 + leaseMaxAgeMs), undefined, "at admitsUntil the lease stops admitting");
  t.ok(a.lease.retired, "and is retired");
  t.ok(leases.holds(place), "its money is held until it goes back");
  t.equal(ledger.appends.length, 0, "two calls in flight: not returned yet");
  leases.settle(a, record(900));
  await turns();
  t.equal(ledger.appends.length, 0, "one call still in flight");
  leases.settle(b, record(1_200));
  await turns();
  t.equal(ledger.appends.length, 1, "the last settle returns it");
  t.same(at(ledger.appends, 0).ids.length, 2);
  t.equal(at(ledger.appends, 0).settle, a.lease.reservation, "the return settles the lease's hold");
  t.notOk(leases.holds(place), "nothing held once the return landed");
});

t.test("renewal starts at renewAt, not before, once; the new lease replaces the old, which goes back", async (t) => {
  const { leases, ledger } = fixture();
  const first = must(await leases.takeWithNewLease(place, estimate, bigLimit, t0));
  must(leases.take(place, estimate, t0 + 749));
  t.equal(ledger.reserves.length, 1, "renewAt − 1: no renewal");
  must(leases.take(place, estimate, t0 + 750));
  t.equal(ledger.reserves.length, 2, "renewAt: the next lease is asked for");
  t.equal(at(at(ledger.reserves, 1).parts, 0).amount_nanos, first.lease.amount, "of the current lease's size");
  t.equal(at(ledger.reserves, 1).now, t0 + 750);
  t.equal(at(ledger.reserves, 1).expiresAt, t0 + 750 + 60_000);
  must(leases.take(place, estimate, t0 + 751));
  t.equal(ledger.reserves.length, 2, "one renewal at a time");
  await turns();
  const next = must(leases.take(place, estimate, t0 + 752));
  t.not(next.lease, first.lease, "calls now take the new lease");
  t.equal(next.lease.admitsUntil, t0 + 750 + leaseMaxAgeMs);
  t.ok(first.lease.retired, "the old lease was retired");
  t.ok(leases.holds(place));
  await leases.close();
});

t.test("a refused renewal tries a quarter of what is left once, only when that is worth a lease, then backs off", async (t) => {
  const { leases, ledger, clock } = fixture();
  must(await leases.takeWithNewLease(place, estimate, bigLimit, t0));
  // A quarter of 63 999 is 15 999: one nano under 16 estimates, not tried.
  ledger.outcomes.push({ admitted: false, limit_nanos: 100_000, spent_nanos: 20_000, reserved_nanos: 16_001 });
  must(leases.take(place, estimate, t0 + 750));
  await turns();
  t.equal(ledger.reserves.length, 2, "no second attempt under the minimum");
  clock.ms = t0 + 1_749;
  t.equal(await leases.takeWithNewLease(place, estimate, bigLimit, t0 + 1_749), undefined, "refused at t0 + 750: no lease until t0 + 1 750");
  t.equal(ledger.reserves.length, 2);
  clock.ms = t0 + 1_750;
  must(await leases.takeWithNewLease(place, estimate, bigLimit, t0 + 1_750));
  t.equal(ledger.reserves.length, 3, "asked again once the back-off ended");
  await leases.close();
});

t.test("a refused lease: the second size is a quarter of limit − spent − reserved, tried once, at exactly the minimum too", async (t) => {
  const { leases, ledger, clock } = fixture();
  // 64 000 left: a quarter is 16 000, exactly 16 estimates: tried.
  ledger.outcomes.push({ admitted: false, limit_nanos: 1_000_000, spent_nanos: 900_000, reserved_nanos: 36_000 });
  ledger.outcomes.push({ admitted: false, limit_nanos: 1_000_000, spent_nanos: 900_000, reserved_nanos: 36_000 });
  ledger.outcomes.push({ admitted: true });
  t.equal(await leases.takeWithNewLease(place, estimate, bigLimit, t0), undefined, "both sizes refused");
  t.same(
    ledger.reserves.map((r) => at(r.parts, 0).amount_nanos),
    [256_000, 16_000],
    "two attempts: the full size, then a quarter of what is left",
  );
  t.equal(at(ledger.reserves, 0).now, t0);
  t.not(at(at(ledger.reserves, 0).parts, 0).id, at(at(ledger.reserves, 1).parts, 0).id, "each attempt its own id");
  clock.ms = t0 + 999;
  t.equal(await leases.takeWithNewLease(place, estimate, bigLimit, t0 + 999), undefined, "backing off until t0 + 1 000");
  t.equal(ledger.reserves.length, 2);
  clock.ms = t0 + 1_000;
  const ticket = must(await leases.takeWithNewLease(place, estimate, bigLimit, t0 + 1_000));
  t.equal(ledger.reserves.length, 3);
  t.equal(ticket.lease.amount, 256_000);
  await leases.close();
});

t.test("the second size, when admitted, is the lease's amount", async (t) => {
  const { leases, ledger } = fixture();
  ledger.outcomes.push({ admitted: false, limit_nanos: 1_000_000, spent_nanos: 200_000, reserved_nanos: 100_000 });
  const ticket = must(await leases.takeWithNewLease(place, estimate, bigLimit, t0));
  t.same(
    ledger.reserves.map((r) => at(r.parts, 0).amount_nanos),
    [256_000, 175_000],
  );
  t.equal(ticket.lease.amount, 175_000);
  await leases.close();
});

t.test("a first lease refused one nano under the minimum is not asked for twice", async (t) => {
  const { leases, ledger } = fixture();
  ledger.outcomes.push({ admitted: false, limit_nanos: 63_999, spent_nanos: 0, reserved_nanos: 0 });
  t.equal(await leases.takeWithNewLease(place, estimate, bigLimit, t0), undefined);
  t.equal(ledger.reserves.length, 1);
});

t.test("a ledger that fails the lease: a warning, then no lease for 1 s", async (t) => {
  const { leases, ledger, clock, warnings } = fixture();
  const failure = new Error("the ledger is away");
  ledger.outcomes.push(failure);
  clock.ms = t0 + 5;
  t.equal(await leases.takeWithNewLease(place, estimate, bigLimit, t0), undefined);
  t.same(warnings, [{ msg: "budget lease not taken", fields: { project_id: "prj_a", api_key_id: undefined, error: failure } }]);
  clock.ms = t0 + 1_004;
  t.equal(await leases.takeWithNewLease(place, estimate, bigLimit, t0 + 1_004), undefined, "the back-off runs from the clock at the failure");
  t.equal(ledger.reserves.length, 1);
  clock.ms = t0 + 1_005;
  must(await leases.takeWithNewLease(place, estimate, bigLimit, t0 + 1_005));
  t.equal(ledger.reserves.length, 2);
  await leases.close();
});

t.test("near the limit no lease is taken: an eighth of the limit under 16 estimates is refused without a ledger step, and backed off", async (t) => {
  const { leases, ledger, clock } = fixture();
  const exactly = 16 * estimate * 8; // an eighth is exactly 16 estimates
  t.equal(await leases.takeWithNewLease(place, estimate, exactly - 1, t0), undefined, "one nano under");
  t.equal(ledger.reserves.length, 0, "no ledger step");
  clock.ms = t0 + 999;
  t.equal(await leases.takeWithNewLease(place, estimate, bigLimit, t0 + 999), undefined, "no lease for 1 s, whatever the limit now");
  t.equal(ledger.reserves.length, 0);
  clock.ms = t0 + 1_000;
  const ticket = must(await leases.takeWithNewLease(place, estimate, exactly, t0 + 1_000));
  t.equal(ticket.lease.amount, 16 * estimate, "exactly 16 estimates is a lease");
  t.equal(ledger.reserves.length, 1);
  await leases.close();
});

t.test("a lease admits up to its amount exactly; a full lease is retired for a new one", async (t) => {
  const { leases, ledger } = fixture();
  const exactly = 16 * estimate * 8;
  const tickets = [must(await leases.takeWithNewLease(place, estimate, exactly, t0))];
  for (let i = 1; i < 16; i++) tickets.push(must(leases.take(place, estimate, t0)));
  t.equal(at(tickets, 15).lease.used, 16 * estimate, "the 16th estimate fills it exactly");
  t.equal(leases.take(place, estimate, t0), undefined, "the 17th does not fit");
  ledger.outcomes.push({ admitted: false, limit_nanos: exactly, spent_nanos: 0, reserved_nanos: exactly });
  t.equal(await leases.takeWithNewLease(place, estimate, exactly, t0), undefined, "no room for another lease");
  t.ok(at(tickets, 0).lease.retired, "the full lease was retired");
  for (const ticket of tickets) leases.settle(ticket, record(estimate));
  await turns();
  t.equal(ledger.appends.length, 1, "and went back after its last call");
  t.notOk(leases.holds(place));
});

t.test("settle: what a call did not spend goes back to the lease; without a record its estimate stays used", async (t) => {
  const { leases, ledger } = fixture();
  const a = must(await leases.takeWithNewLease(place, estimate, bigLimit, t0));
  const b = must(leases.take(place, estimate, t0));
  const c = must(leases.take(place, estimate, t0));
  const spent = record(400);
  leases.settle(a, spent);
  t.equal(a.lease.used, 2 * estimate + 400);
  t.equal(a.lease.inFlight, 2);
  leases.settle(b, undefined);
  t.equal(a.lease.used, 2 * estimate + 400, "a call without a record keeps its estimate");
  t.equal(a.lease.inFlight, 1);
  t.same([...a.lease.unapplied.keys()], [spent.usage_key]);
  leases.cancel(c);
  t.equal(a.lease.used, estimate + 400, "a cancelled ticket gives its estimate back at once");
  t.equal(a.lease.inFlight, 0);
  await turns();
  t.equal(ledger.appends.length, 0, "a lease still admitting is not returned when idle");
  t.ok(leases.holds(place));
  await leases.returnIdle(place);
  t.same(ledger.appends, [{ ids: [spent.usage_key], settle: a.lease.reservation }], "the return carries the record");
});

t.test("cancel of the last ticket of a retired lease returns it; of one of two, not yet", async (t) => {
  const { leases, ledger } = fixture();
  const a = must(await leases.takeWithNewLease(place, estimate, bigLimit, t0));
  const b = must(leases.take(place, estimate, t0));
  leases.forget(place);
  leases.cancel(a);
  await turns();
  t.equal(ledger.appends.length, 0, "one call in flight");
  t.equal(a.lease.inFlight, 1);
  leases.cancel(b);
  await turns();
  t.same(ledger.appends, [{ ids: [], settle: a.lease.reservation }]);
  t.equal(a.lease.used, 0);
  t.notOk(leases.holds(place));
});

t.test("applied: records the recorder appended are not carried by the return; another project's same key is", async (t) => {
  const { leases, ledger } = fixture();
  const a = must(await leases.takeWithNewLease(place, estimate, bigLimit, t0));
  const b = must(leases.take(place, estimate, t0));
  const ra = record(estimate);
  const rb = record(estimate);
  leases.settle(a, ra);
  leases.settle(b, rb);
  leases.applied([ra, { ...rb, project_id: "prj_other" }]);
  t.same([...a.lease.unapplied.keys()], [rb.usage_key]);
  await leases.returnIdle(place);
  t.same(ledger.appends, [{ ids: [rb.usage_key], settle: a.lease.reservation }]);
  t.equal(internals(leases).awaitingLedger.size, 0, "the return forgets what it carried");
  t.equal(internals(leases).returns.size, 0, "and its own promise");
});

/** The private bookkeeping whose leaks no public method shows. */
function internals(leases: BudgetLeases): { awaitingLedger: Map<string, unknown>; returns: Set<unknown> } {
  return leases as unknown as { awaitingLedger: Map<string, unknown>; returns: Set<unknown> };
}

t.test("holds: false for an unknown budget, true while current or returning, false once returned", async (t) => {
  const { leases } = fixture({ settleTicks: 3 });
  t.equal(leases.holds(place), false);
  const a = must(await leases.takeWithNewLease(place, estimate, bigLimit, t0));
  t.equal(leases.holds(place), true, "current");
  leases.forget(place);
  t.equal(leases.holds(place), true, "retired, its call in flight");
  leases.settle(a, record(estimate));
  t.equal(leases.holds(place), true, "returning");
  await leases.returnIdle(place);
  t.equal(leases.holds(place), false, "returned");
});

t.test("returnIdle: nothing for an unknown budget; retires the lease and waits for its return", async (t) => {
  const { leases, ledger } = fixture({ settleTicks: 3 });
  await leases.returnIdle(place);
  t.equal(ledger.appends.length, 0);
  const a = must(await leases.takeWithNewLease(place, estimate, bigLimit, t0));
  leases.settle(a, record(estimate));
  await leases.returnIdle(place);
  t.equal(ledger.appends.length, 1, "returned by the time returnIdle resolves");
  t.notOk(leases.holds(place));
  t.equal(leases.take(place, estimate, t0 + 1), undefined, "and no longer admitting");
});

t.test("forget: the lease stops admitting at once and goes back; the back-off is lifted", async (t) => {
  const { leases, ledger, clock } = fixture();
  leases.forget(place); // an unknown budget: nothing to do
  leases.settle(must(await leases.takeWithNewLease(place, estimate, bigLimit, t0)), undefined);
  leases.forget(place);
  t.equal(leases.take(place, estimate, t0 + 1), undefined, "no ticket from a forgotten lease");
  await turns();
  t.equal(ledger.appends.length, 1, "returned");
  t.equal(await leases.takeWithNewLease(place, estimate, 1_000, t0 + 2), undefined, "a new, small limit: no lease, backing off");
  leases.forget(place);
  clock.ms = t0 + 3;
  must(await leases.takeWithNewLease(place, estimate, bigLimit, t0 + 3));
  t.equal(ledger.reserves.length, 2, "a changed budget is leased again at once");
  await leases.close();
});

t.test("close: every lease stops admitting; waits for the idle ones' returns; one in flight goes back at its settle", async (t) => {
  const { leases, ledger } = fixture({ settleTicks: 3 });
  const other: BudgetPlace = { project_id: "prj_b", api_key_id: undefined };
  const idle = must(await leases.takeWithNewLease(place, estimate, bigLimit, t0));
  leases.settle(idle, record(estimate));
  const busy = must(await leases.takeWithNewLease(other, estimate, bigLimit, t0));
  await leases.close();
  t.equal(ledger.appends.length, 1, "the idle lease is back by the time close resolves");
  t.equal(at(ledger.appends, 0).settle, idle.lease.reservation);
  t.equal(leases.take(place, estimate, t0 + 1), undefined, "neither admits");
  t.equal(leases.take(other, estimate, t0 + 1), undefined);
  t.ok(busy.lease.retired);
  t.ok(leases.holds(other), "the busy one still holds its money");
  leases.settle(busy, undefined);
  await turns(10);
  t.equal(ledger.appends.length, 2, "and goes back at its call's settle");
  t.notOk(leases.holds(other));
});

t.test("close waits for an idle lease's return", async (t) => {
  const { leases, ledger } = fixture({ settleTicks: 3 });
  const a = must(await leases.takeWithNewLease(place, estimate, bigLimit, t0));
  leases.settle(a, record(estimate));
  await leases.close();
  t.equal(ledger.appends.length, 1, "returned by the time close resolves");
  t.notOk(leases.holds(place));
});

t.test("an idle lease goes back on time by itself (here at the month's end, 30 ms on)", async (t) => {
  const now = monthEnd - 30;
  const { leases, ledger } = fixture({ now });
  const a = must(await leases.takeWithNewLease(place, estimate, bigLimit, now));
  t.equal(a.lease.admitsUntil, monthEnd, "never across the period's end");
  t.equal(a.lease.renewAt, monthEnd);
  leases.settle(a, record(estimate));
  await new Promise((resolve) => setTimeout(resolve, 200));
  t.equal(ledger.appends.length, 1, "returned without another call");
  t.notOk(leases.holds(place));
});

t.test("renewAt and admitsUntil 800 ms before the month's end", async (t) => {
  const now = monthEnd - 800;
  const { leases } = fixture({ now });
  const a = must(await leases.takeWithNewLease(place, estimate, bigLimit, now));
  t.equal(a.lease.admitsUntil, monthEnd);
  t.equal(a.lease.renewAt, now + 750);
  await leases.close();
  leases.settle(a, undefined);
  await turns();
});

t.test("the return goes in chunks, the lease's hold settled with the last; every chunk's alerts are published", async (t) => {
  for (const [count, expected] of [
    [5, [2, 2, 1]],
    [4, [2, 2]],
    [1, [1]],
    [0, [0]],
  ] as const) {
    const { leases, ledger, published } = fixture({ chunk: 2 });
    const alert = (n: number): BudgetAlert[] => [{ organization_id: "org_1", project_id: "prj_a", period: "2026-03", threshold: n, limit_nanos: 1, spent_nanos: 1 }];
    ledger.alertsPerAppend = [alert(1), alert(2), alert(3)];
    const first = must(await leases.takeWithNewLease(place, estimate, bigLimit, t0));
    const keys: string[] = [];
    const tickets = [first];
    for (let i = 1; i < count; i++) tickets.push(must(leases.take(place, estimate, t0)));
    for (const ticket of count === 0 ? [] : tickets) {
      const r = record(estimate);
      keys.push(r.usage_key);
      leases.settle(ticket, r);
    }
    if (count === 0) leases.cancel(first);
    await leases.returnIdle(place);
    t.same(
      ledger.appends.map((a) => a.ids.length),
      expected,
      `${count} records: chunks of ${expected.join(", ")}`,
    );
    t.same(ledger.appends.flatMap((a) => a.ids), keys, "each record once, in order");
    t.same(
      ledger.appends.map((a) => a.settle),
      expected.map((_, i) => (i === expected.length - 1 ? first.lease.reservation : undefined)),
      "only the last chunk settles the hold",
    );
    t.same(published, expected.map((_, i) => alert(i + 1)), "each chunk's alerts published");
  }
});

t.test("a failed return is retried while the hold lives (expiresAt − 1), dropped from expiresAt on", async (t) => {
  for (const [when, retried] of [
    [t0 + 60_000 - 1, true],
    [t0 + 60_000, false],
    [t0 + 60_001, false],
  ] as const) {
    const { leases, ledger, clock, warnings } = fixture();
    const a = must(await leases.takeWithNewLease(place, estimate, bigLimit, t0));
    const r = record(estimate);
    leases.settle(a, r);
    ledger.failAppends = 1;
    clock.ms = when;
    await leases.returnIdle(place);
    t.equal(ledger.appends.length, 1, `${when - t0}: one attempt so far`);
    t.equal(leases.holds(place), retried, retried ? "the hold lives: still to return" : "the ledger dropped the hold: nothing held");
    t.equal(warnings.length, retried ? 1 : 0);
    if (retried) {
      t.equal(at(warnings, 0).msg, "budget lease not returned yet; will retry");
      t.same(at(warnings, 0).fields, { project_id: "prj_a", error: new Error("the ledger is away") });
      t.ok(a.lease.unapplied.has(r.usage_key), "the record waits for the retry");
    } else {
      t.equal(internals(leases).awaitingLedger.size, 0, "the record is left to the usage recorder");
    }
  }
});

t.test("the retry lands 1 s later and settles the hold", async (t) => {
  const { leases, ledger } = fixture();
  const a = must(await leases.takeWithNewLease(place, estimate, bigLimit, t0));
  const r = record(estimate);
  leases.settle(a, r);
  ledger.failAppends = 1;
  await leases.returnIdle(place);
  t.equal(ledger.appends.length, 1);
  await new Promise((resolve) => setTimeout(resolve, 1_100));
  await leases.returnIdle(place);
  t.same(at(ledger.appends, 1), { ids: [r.usage_key], settle: a.lease.reservation });
  t.notOk(leases.holds(place));
});
