// Billing's admission of live calls, its usage writes, its budget cache and
// its budget alerts (tenancy/billing.ts outside the job holds, which
// billing-unit.test.ts covers), in process over a real embedded ledger seen
// through a recorder, on an injected clock (Node's mock setInterval for the
// alert sweep). What it proves:
// - a test key, or a project and key without hard limits, is admitted
//   synchronously with no ledger step; each budget is cached for exactly ten
//   seconds on its own, and forgotten at once after a change made here or
//   broadcast by another replica (a key's change retires the key's lease only,
//   a project's the project's);
// - a hard-limited call reserves its estimate rounded up (never below 0) for
//   fifteen minutes under an `rsv_` id of its own (a key's carries the key),
//   from a lease when the estimate is above 0; a failed estimate fails the
//   promise, never synchronously;
// - a refusal while an idle lease is held returns the lease and asks once
//   more; the 402's code, message and details name the budget that refused
//   (project or key) and the figures of the last answer; a job's says what it
//   may cost against what is left, or that the budget is used up once spent
//   and held reach the limit exactly;
// - under both budgets the key is asked first; the project's refusal gives the
//   key's hold back (a lease ticket whole, a reservation in the ledger even if
//   that release fails);
// - a write goes in the ledger's steps (500 on Redis, 1,024 embedded), the
//   first at once, fails with the first failed step's error after the others
//   landed and published their alerts, and takes its records off the leases'
//   returns (which wait for it);
// - alerts are published once with their exact events (project and key),
//   acknowledged, kept pending and logged when publishing fails; pending
//   ones go out at start and every 30 s until stop; stop returns the leases.
import { mkdtempSync } from "node:fs";
import { mock } from "node:test";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import { rejectedWith } from "../support/thrown-by.ts";
import { decodeTime } from "ulid";
import { isoTime, type Clock } from "../../core/clock.ts";
import type { OrganizationEvent } from "../../core/organization-events.ts";
import type { Payer, UsageRecord } from "../../providers/usage.ts";
import { appendChunk, Billing, BothBudgets, usd } from "../../tenancy/billing.ts";
import { LeaseTicket } from "../../tenancy/budget-leases.ts";
import { EmbeddedDataStore } from "../../tenancy/embedded-data-store.ts";
import { EmbeddedLedgerStore } from "../../tenancy/embedded-ledger-store.ts";
import type { BudgetAlert, LedgerStore, Reservation, ReservedPart, ReserveOutcome, StoredBudget, UsageRow, UsageToDate } from "../../tenancy/ledger.ts";
import { recordingLog, type LogLine } from "../support/recording-log.ts";
import { usageRecord } from "../support/usage-record.ts";

const startMs = Date.UTC(2026, 2, 15, 12);
const minute = 60_000;

interface Call {
  method: string;
  args: unknown[];
}

/** The embedded ledger with every call kept, a kind of the test's choice (its step size), and failures or gates on demand. */
class RecordingLedger implements LedgerStore {
  readonly kind: "embedded" | "redis";
  readonly inner: EmbeddedLedgerStore;
  readonly calls: Call[] = [];
  /** Methods whose next call fails with this error. */
  readonly failNext = new Map<string, Error>();
  /** Set: the append of this number (1 = the first from now on) fails. */
  failAppendNo: number | undefined;
  private appendNo = 0;
  /** Set: appends wait for it. */
  appendGate: Promise<void> | undefined;
  /** Set: reserve answers this instead of asking the ledger. */
  reserveAnswer: ReserveOutcome | undefined;

  constructor(inner: EmbeddedLedgerStore, kind: "embedded" | "redis") {
    this.inner = inner;
    this.kind = kind;
  }

  of(method: string): unknown[][] {
    return this.calls.filter((call) => call.method === method).map((call) => call.args);
  }

  private note(method: string, args: unknown[]): void {
    this.calls.push({ method, args });
    const error = this.failNext.get(method);
    if (error) {
      this.failNext.delete(method);
      throw error;
    }
  }

  async append(records: UsageRecord[], settle?: Reservation): Promise<BudgetAlert[]> {
    this.note("append", settle ? [records, settle] : [records]);
    this.appendNo += 1;
    if (this.failAppendNo === this.appendNo) throw new Error("disk full");
    if (this.appendGate) await this.appendGate;
    return this.inner.append(records, settle);
  }
  async reserve(reservation: Reservation, amountNanos: number, expiresAtMs: number, nowMs: number): Promise<ReserveOutcome> {
    this.note("reserve", [reservation, amountNanos, expiresAtMs, nowMs]);
    return this.reserveAnswer ?? this.inner.reserve(reservation, amountNanos, expiresAtMs, nowMs);
  }
  async reserveParts(place: Omit<Reservation, "id">, parts: ReservedPart[], expiresAtMs: number, nowMs: number, restore: boolean): Promise<ReserveOutcome> {
    this.note("reserveParts", [place, parts, expiresAtMs, nowMs, restore]);
    return this.inner.reserveParts(place, parts, expiresAtMs, nowMs, restore);
  }
  async release(reservation: Reservation): Promise<void> {
    this.note("release", [reservation]);
    return this.inner.release(reservation);
  }
  async putBudget(projectId: string, budget: StoredBudget, apiKeyId?: string): Promise<void> {
    this.note("putBudget", [projectId, budget, apiKeyId]);
    return this.inner.putBudget(projectId, budget, apiKeyId);
  }
  async getBudget(projectId: string, apiKeyId?: string): Promise<StoredBudget | undefined> {
    this.note("getBudget", [projectId, apiKeyId]);
    return this.inner.getBudget(projectId, apiKeyId);
  }
  spent(projectId: string, period: string, apiKeyId?: string): Promise<number> {
    return this.inner.spent(projectId, period, apiKeyId);
  }
  usageRows(projectId: string, fromPeriod: string, toPeriod: string): Promise<UsageRow[]> {
    return this.inner.usageRows(projectId, fromPeriod, toPeriod);
  }
  records(projectId: string, period: string): Promise<UsageRecord[]> {
    return this.inner.records(projectId, period);
  }
  usageToDate(ids: string[]): Promise<Map<string, UsageToDate>> {
    return this.inner.usageToDate(ids);
  }
  async pendingAlerts(): Promise<BudgetAlert[]> {
    this.note("pendingAlerts", []);
    return this.inner.pendingAlerts();
  }
  async ackAlert(alert: BudgetAlert): Promise<void> {
    this.note("ackAlert", [alert]);
    return this.inner.ackAlert(alert);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

interface Setup {
  billing: Billing;
  ledger: RecordingLedger;
  store: EmbeddedDataStore;
  clock: Clock & { ms: number };
  published: OrganizationEvent[];
  /** Event ids the publisher refuses. */
  refused: Set<string>;
  lines: LogLine[];
  /** Another replica's Billing on the same ledger and store. */
  other: () => Billing;
}

function setup(t: Test, opts: { kind?: "embedded" | "redis"; events?: false } = {}): Setup {
  const dir = mkdtempSync(join(tmpdir(), "troupe-billing-admit-"));
  const clock = { ms: startMs, now: () => clock.ms };
  const store = new EmbeddedDataStore(dir, clock);
  const inner = new EmbeddedLedgerStore(dir, { now: clock.now });
  const ledger = new RecordingLedger(inner, opts.kind ?? "embedded");
  const published: OrganizationEvent[] = [];
  const refused = new Set<string>();
  const events = {
    publish: async (event: OrganizationEvent) => {
      if (refused.has(event.id)) throw new Error("webhooks unavailable");
      published.push(event);
    },
  };
  const { log, lines } = recordingLog();
  const billing = new Billing({ ledger, store, clock, log, ...(opts.events === false ? {} : { events }) });
  const others: Billing[] = [];
  t.teardown(async () => {
    await billing.stop();
    for (const other of others) await other.stop();
    await inner.close();
    await store.close();
  });
  const other = () => {
    const made = new Billing({ ledger, store, clock, log });
    others.push(made);
    return made;
  };
  return { billing, ledger, store, clock, published, refused, lines, other };
}

/** `usdLimit` a month (10,000 nano-dollars by default: no lease is taken for an estimate of 79 or more). */
const budget = (hard: boolean, usdLimit = 0.00001, alert_thresholds: number[] = []): StoredBudget => ({ monthly_limit_usd: usdLimit, alert_thresholds, hard_limit: hard, updated_at: "2026-03-01T00:00:00.000Z" });

const payer = (project_id: string, live = true): Payer => ({ organization_id: "org_1", project_id, environment_id: "env_1", api_key_id: `key_${project_id}`, live });

/** Spends `cost_nanos` of the project (and, with `api_key_id`, of that key) straight in the ledger. */
async function spend(ledger: RecordingLedger, project_id: string, cost_nanos: number, api_key_id = "key_other"): Promise<void> {
  await ledger.inner.append([usageRecord({ project_id, api_key_id, cost_nanos, usage_key: `spent_${project_id}_${api_key_id}_${cost_nanos}` })]);
}

/** Whether `amount` more fits in the budget at `nowMs`, asked of the ledger itself (no recorded call; the probe expires at once). */
function fits(ledger: RecordingLedger, place: Omit<Reservation, "id">, amount: number, nowMs = startMs): Promise<ReserveOutcome> {
  return ledger.inner.reserveParts(place, [{ id: `probe_${Math.random()}`, amount_nanos: amount }], nowMs, nowMs, false);
}

/** Turns of the event loop until `done` (a ledger commit lands within a few), at most two real seconds. */
/** Polls `done` between event-loop turns; gives up after 10 s (a bound for a loaded CI machine, not a timing check: the assertion after it fails). */
async function until(done: () => Promise<boolean>): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (!(await done()) && performance.now() < deadline) await new Promise((resolve) => setImmediate(resolve));
}

async function settleAll(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

t.test("usd rounds to the micro-dollar; the ledger's step sizes", async (t) => {
  t.equal(usd(1499), 0.000001);
  t.equal(usd(1500), 0.000002);
  t.equal(usd(2_500_000_000), 2.5);
  t.equal(usd(1_234_567_890), 1.234568);
  t.strictSame(appendChunk, { redis: 500, embedded: 1024 });
});

t.test("a test key is admitted synchronously, with no ledger step and no estimate", async (t) => {
  const { billing, ledger } = setup(t);
  await ledger.inner.putBudget("prj_t", budget(true));
  let estimates = 0;
  t.equal(
    billing.admit(payer("prj_t", false), () => ++estimates),
    undefined,
  );
  t.equal(estimates, 0);
  t.strictSame(ledger.calls, []);
});

t.test("without hard limits the first call reads both budgets, then calls are admitted synchronously for ten seconds", async (t) => {
  const { billing, ledger, clock } = setup(t);
  await ledger.inner.putBudget("prj_soft", budget(false));
  const p = payer("prj_soft");
  let estimates = 0;
  const estimate = () => ++estimates;
  const first = billing.admit(p, estimate);
  t.ok(first instanceof Promise, "the first call reads the budgets");
  t.equal(await first, undefined);
  t.strictSame(ledger.of("getBudget"), [
    ["prj_soft", undefined],
    ["prj_soft", p.api_key_id],
  ]);
  clock.ms = startMs + 9_999;
  t.equal(billing.admit(p, estimate), undefined, "cached under ten seconds");
  t.equal(ledger.of("getBudget").length, 2);
  clock.ms = startMs + 10_000;
  const again = billing.admit(p, estimate);
  t.ok(again instanceof Promise, "read again at ten seconds");
  t.equal(await again, undefined);
  t.equal(ledger.of("getBudget").length, 4);
  t.equal(estimates, 0, "no estimate without a hard limit");
  t.strictSame(ledger.of("reserve"), []);
});

t.test("the project's and the key's budgets each expire on their own ten seconds", async (t) => {
  const { billing, ledger, clock } = setup(t);
  await ledger.inner.putBudget("prj_ttl", budget(false));
  const p = payer("prj_ttl");
  const estimate = () => 1;
  t.equal(await billing.reserveParts(p, "j0", [1]), undefined, "reads the project's budget only");
  const keyMissing = billing.admit(p, estimate);
  t.ok(keyMissing instanceof Promise, "the key's budget not read yet");
  await keyMissing;
  // Both read at startMs. The project's forgotten and read again 5 s later; the key's is then the older.
  clock.ms = startMs + 5_000;
  await billing.putBudget("prj_ttl", budget(false));
  const projectMissing = billing.admit(p, estimate);
  t.ok(projectMissing instanceof Promise, "the project's budget forgotten");
  await projectMissing;
  await billing.putBudget("prj_ttl", budget(false), p.api_key_id);
  t.equal(await billing.reserveParts(p, "j1", [1], { keyBudget: true }), undefined, "reads the key's budget only (the project's is fresh)");
  clock.ms = startMs + 8_000;
  await billing.putBudget("prj_ttl", budget(false));
  t.equal(await billing.reserveParts(p, "j2", [1]), undefined, "the project's read at 8 s, the key's at 5 s");
  clock.ms = startMs + 14_999;
  t.equal(billing.admit(p, estimate), undefined);
  clock.ms = startMs + 15_000;
  const keyStale = billing.admit(p, estimate);
  t.ok(keyStale instanceof Promise, "the key's ten seconds are up");
  await keyStale;
  // Both read at 15 s; the key's again at 17 s.
  clock.ms = startMs + 17_000;
  await billing.putBudget("prj_ttl", budget(false), p.api_key_id);
  t.equal(await billing.reserveParts(p, "j3", [1], { keyBudget: true }), undefined);
  clock.ms = startMs + 24_999;
  t.equal(billing.admit(p, estimate), undefined);
  clock.ms = startMs + 25_000;
  t.ok(billing.admit(p, estimate) instanceof Promise, "the project's ten seconds are up");
});

t.test("a hard-limited call reserves its estimate, rounded up and never below 0, for fifteen minutes under an rsv_ id", async (t) => {
  const { billing, ledger, clock } = setup(t);
  await ledger.inner.putBudget("prj_hard", budget(true));
  const p = payer("prj_hard");
  const first = await billing.admit(p, () => 2999.2);
  if (!first) return t.fail("reserved");
  t.strictSame(Object.keys(first).sort(), ["id", "period", "project_id"], "no api_key_id on the project's reservation");
  t.equal(first.project_id, "prj_hard");
  t.equal(first.period, "2026-03");
  t.match(first.id, /^rsv_[0-9A-Z]{26}$/);
  t.equal(decodeTime(first.id.slice(4)), startMs, "the id's time is the clock's");
  t.strictSame(ledger.of("reserve"), [[first, 3000, startMs + 15 * minute, startMs]]);
  clock.ms = startMs + 1_000;
  const negative = billing.admit(p, () => -5);
  t.ok(negative instanceof Promise);
  const zero = await negative;
  const fractional = await billing.admit(p, () => 2000.1);
  t.notOk(zero instanceof LeaseTicket);
  t.strictSame(
    ledger.of("reserve").slice(1).map((args) => args.slice(1)),
    [
      [0, startMs + 1_000 + 15 * minute, startMs + 1_000],
      [2001, startMs + 1_000 + 15 * minute, startMs + 1_000],
    ],
    "the cached path rounds the same way",
  );
  t.equal(ledger.of("getBudget").length, 2, "one read of each budget");
  t.strictSame(ledger.of("reserveParts"), [], "no lease of so small a budget");
  t.not(fractional?.id, zero?.id);
  t.strictSame(await fits(ledger, { project_id: "prj_hard", period: "2026-03" }, 5000, startMs + 15 * minute - 1), { admitted: false, spent_nanos: 0, reserved_nanos: 5001, limit_nanos: 10_000 }, "the first reservation held until fifteen minutes");
  t.strictSame(await fits(ledger, { project_id: "prj_hard", period: "2026-03" }, 7999, startMs + 15 * minute), { admitted: true }, "then expired");
});

t.test("a key-only hard budget reserves under the key, on the slow path and the cached one", async (t) => {
  const { billing, ledger } = setup(t);
  const p = payer("prj_konly");
  await ledger.inner.putBudget("prj_konly", budget(true), p.api_key_id);
  const slow = await billing.admit(p, () => 1000);
  const fast = await billing.admit(p, () => 1000);
  for (const reservation of [slow, fast]) {
    if (!reservation) return t.fail("reserved");
    t.strictSame(Object.keys(reservation).sort(), ["api_key_id", "id", "period", "project_id"]);
    t.equal(reservation.api_key_id, p.api_key_id);
    t.notOk(reservation instanceof BothBudgets);
  }
  t.equal(ledger.of("reserve").length, 2);
});

t.test("an estimate that throws fails the admission's promise, on the slow path and the cached one", async (t) => {
  const { billing, ledger } = setup(t);
  await ledger.inner.putBudget("prj_est", budget(true));
  const p = payer("prj_est");
  const broken = () => {
    throw new Error("no estimate");
  };
  await t.rejects(Promise.resolve(billing.admit(p, broken)), { message: "no estimate" });
  const cached = billing.admit(p, broken);
  t.ok(cached instanceof Promise, "never thrown synchronously");
  await t.rejects(Promise.resolve(cached), { message: "no estimate" });
  t.strictSame(ledger.of("reserve"), []);
});

t.test("a call is refused at the project's limit, not one nano-dollar under it", async (t) => {
  const { billing, ledger } = setup(t);
  await ledger.inner.putBudget("prj_full", budget(true));
  await ledger.inner.putBudget("prj_almost", budget(true));
  await spend(ledger, "prj_full", 10_000);
  await spend(ledger, "prj_almost", 9_999);
  t.ok(await billing.admit(payer("prj_almost"), () => 5000), "one under the limit: admitted");
  const error = await rejectedWith(billing.admit(payer("prj_full"), () => 5000));
  t.equal(error.code, "budget_exceeded");
  t.equal(error.status, 402);
  t.equal(error.message, "the project's monthly budget of 0.00001 USD is used up (0.00001 USD spent)");
  t.strictSame(error.details, { limit_usd: 0.00001, spent_usd: 0.00001, reserved_usd: 0, period: "2026-03" });
  t.equal(ledger.of("reserve").length, 2, "asked once each: no lease to return");
});

t.test("a call is refused at the key's limit with the key's message", async (t) => {
  const { billing, ledger } = setup(t);
  const p = payer("prj_kfull");
  await ledger.inner.putBudget("prj_kfull", budget(true), p.api_key_id);
  await spend(ledger, "prj_kfull", 10_000, p.api_key_id);
  const error = await rejectedWith(billing.admit(p, () => 5000));
  t.equal(error.code, "budget_exceeded");
  t.equal(error.message, "this API key's monthly budget of 0.00001 USD is used up (0.00001 USD spent)");
  t.strictSame(error.details, { limit_usd: 0.00001, spent_usd: 0.00001, reserved_usd: 0, period: "2026-03", budget: "api_key", api_key_id: p.api_key_id });
  const [reservation] = ledger.of("reserve")[0] ?? [];
  t.match(reservation, { project_id: "prj_kfull", api_key_id: p.api_key_id, period: "2026-03" });
});

t.test("a call's refusal says used up even when the ledger refused below the limit", async (t) => {
  const { billing, ledger } = setup(t);
  const p = payer("prj_odd");
  await ledger.inner.putBudget("prj_odd", budget(true));
  ledger.reserveAnswer = { admitted: false, spent_nanos: 4000, reserved_nanos: 1000, limit_nanos: 10_000 };
  const error = await rejectedWith(billing.admit(p, () => 5000));
  t.equal(error.message, "the project's monthly budget of 0.00001 USD is used up (0.000004 USD spent)");
  t.strictSame(error.details, { limit_usd: 0.00001, spent_usd: 0.000004, reserved_usd: 0.000001, period: "2026-03" });
  await ledger.inner.putBudget("prj_odd", budget(true), p.api_key_id);
  await billing.putBudget("prj_odd", budget(false));
  const keyError = await rejectedWith(billing.admit(p, () => 5000));
  t.equal(keyError.message, "this API key's monthly budget of 0.00001 USD is used up (0.000004 USD spent)");
});

t.test("a job that does not fit is told what it may cost against what is left of the project's budget", async (t) => {
  const { billing, ledger } = setup(t);
  await ledger.inner.putBudget("prj_job", budget(true));
  await spend(ledger, "prj_job", 4000);
  t.ok(await billing.reserveParts(payer("prj_job"), "job0", [1000]), "1,000 held by work in flight");
  const error = await rejectedWith(billing.reserveParts(payer("prj_job"), "job1", [3000, 3001]));
  t.equal(error.code, "budget_exceeded");
  t.equal(error.message, "this work may cost up to 0.000006 USD, more than the 0.000005 USD left of the project's monthly budget of 0.00001 USD (0.000004 USD spent, 0.000001 USD reserved by work in flight)");
  t.strictSame(error.details, { limit_usd: 0.00001, spent_usd: 0.000004, reserved_usd: 0.000001, period: "2026-03", required_usd: 0.000006 });
});

t.test("a job refused when spent and held reach the project's limit exactly is told the budget is used up", async (t) => {
  const { billing, ledger } = setup(t);
  await ledger.inner.putBudget("prj_jobfull", budget(true));
  await spend(ledger, "prj_jobfull", 9000);
  t.ok(await billing.reserveParts(payer("prj_jobfull"), "job0", [1000]));
  const error = await rejectedWith(billing.reserveParts(payer("prj_jobfull"), "job1", [1]));
  t.equal(error.message, "the project's monthly budget of 0.00001 USD is used up (0.000009 USD spent)");
  t.strictSame(error.details, { limit_usd: 0.00001, spent_usd: 0.000009, reserved_usd: 0.000001, period: "2026-03" });
});

t.test("a job that does not fit a key's budget is told so, naming the key", async (t) => {
  const { billing, ledger } = setup(t);
  const p = payer("prj_kjob");
  await ledger.inner.putBudget("prj_kjob", budget(true), p.api_key_id);
  await spend(ledger, "prj_kjob", 4000, p.api_key_id);
  t.ok(await billing.reserveParts(p, "job0", [1000], { keyBudget: true }));
  const error = await rejectedWith(billing.reserveParts(p, "job1", [3000, 3001], { keyBudget: true }));
  t.equal(error.message, "this work may cost up to 0.000006 USD, more than the 0.000005 USD left of this API key's monthly budget of 0.00001 USD (0.000004 USD spent, 0.000001 USD reserved by work in flight)");
  t.strictSame(error.details, { limit_usd: 0.00001, spent_usd: 0.000004, reserved_usd: 0.000001, period: "2026-03", budget: "api_key", api_key_id: p.api_key_id, required_usd: 0.000006 });
});

t.test("a job refused when spent and held reach the key's limit exactly is told the key's budget is used up", async (t) => {
  const { billing, ledger } = setup(t);
  const p = payer("prj_kjobfull");
  await ledger.inner.putBudget("prj_kjobfull", budget(true), p.api_key_id);
  await spend(ledger, "prj_kjobfull", 9000, p.api_key_id);
  t.ok(await billing.reserveParts(p, "job0", [1000], { keyBudget: true }));
  const error = await rejectedWith(billing.reserveParts(p, "job1", [1], { keyBudget: true }));
  t.equal(error.message, "this API key's monthly budget of 0.00001 USD is used up (0.000009 USD spent)");
  t.strictSame(error.details, { limit_usd: 0.00001, spent_usd: 0.000009, reserved_usd: 0.000001, period: "2026-03", budget: "api_key", api_key_id: p.api_key_id });
});

t.test("a job's restore, release and bill ask the ledger only of the budgets that hold it", async (t) => {
  const { billing, ledger } = setup(t);
  const k = payer("prj_konlyjob");
  await ledger.inner.putBudget("prj_pjob", budget(true));
  await ledger.inner.putBudget("prj_konlyjob", budget(true), k.api_key_id);
  const projectHeld = await billing.reserveParts(payer("prj_pjob"), "pj", [1000]);
  const keyHeld = await billing.reserveParts(k, "kj", [1000], { keyBudget: true });
  if (!projectHeld || !keyHeld) return t.fail("held");
  const before = ledger.calls.length;
  await billing.restoreParts(projectHeld, projectHeld.parts);
  await billing.restoreParts(keyHeld, keyHeld.parts);
  await billing.releaseParts(projectHeld, ["pj:0"]);
  await billing.releaseParts(keyHeld, ["kj:0"]);
  t.strictSame(
    ledger.calls.slice(before).map(({ method, args }) => [method, args[0]]),
    [
      ["reserveParts", { project_id: "prj_pjob", period: "2026-03" }],
      ["reserveParts", { project_id: "prj_konlyjob", api_key_id: k.api_key_id, period: "2026-03" }],
      ["release", { project_id: "prj_pjob", period: "2026-03", id: "pj:0" }],
      ["release", { project_id: "prj_konlyjob", api_key_id: k.api_key_id, period: "2026-03", id: "kj:0" }],
    ],
  );
  await billing.bill(usageRecord({ project_id: "prj_pjob", cost_nanos: 1000, usage_key: "seg" }));
  t.strictSame(ledger.of("release").length, 2, "a bill without parts releases nothing");
  await spend(ledger, "prj_pjob", 10_000);
  await rejectedWith(billing.reserveParts(payer("prj_pjob"), "pj2", [1000]));
  t.strictSame(ledger.of("release").length, 2, "a project-only job's refusal has no key's holds to release");
});

t.test("under both hard budgets the key is asked first, and the pair carries the project's fields", async (t) => {
  const { billing, ledger } = setup(t);
  const p = payer("prj_both");
  await ledger.inner.putBudget("prj_both", budget(true));
  await ledger.inner.putBudget("prj_both", budget(true), p.api_key_id);
  for (const path of ["slow", "cached"]) {
    const before = ledger.of("reserve").length;
    const both = await billing.admit(p, () => 1000);
    if (!(both instanceof BothBudgets)) return t.fail(`${path}: both held`);
    const [keyArgs, projectArgs] = ledger.of("reserve").slice(before);
    t.equal(keyArgs?.[0], both.key, `${path}: the key's first`);
    t.equal(projectArgs?.[0], both.project, `${path}: then the project's`);
    t.equal(both.key.api_key_id, p.api_key_id);
    t.notOk("api_key_id" in both.project);
    t.equal(both.project_id, "prj_both");
    t.equal(both.period, both.project.period);
    t.equal(both.id, both.project.id);
    t.not(both.id, both.key.id);
  }
});

t.test("under both, the key's refusal is the error and the project is never asked", async (t) => {
  const { billing, ledger } = setup(t);
  const p = payer("prj_bk");
  await ledger.inner.putBudget("prj_bk", budget(true));
  await ledger.inner.putBudget("prj_bk", budget(true), p.api_key_id);
  await spend(ledger, "prj_bk", 10_000, p.api_key_id);
  const error = await rejectedWith(billing.admit(p, () => 1000));
  t.match(error.details, { budget: "api_key", api_key_id: p.api_key_id });
  t.equal(ledger.of("reserve").length, 1);
  t.strictSame(ledger.of("release"), []);
});

t.test("under both, the project's refusal releases the key's reservation, even when that release fails", async (t) => {
  const { billing, ledger } = setup(t);
  const p = payer("prj_bp");
  const keyPlace = { project_id: "prj_bp", api_key_id: p.api_key_id, period: "2026-03" };
  await ledger.inner.putBudget("prj_bp", budget(true));
  await ledger.inner.putBudget("prj_bp", budget(true), p.api_key_id);
  await spend(ledger, "prj_bp", 10_000);
  const error = await rejectedWith(billing.admit(p, () => 10_000));
  t.equal(error.message, "the project's monthly budget of 0.00001 USD is used up (0.00001 USD spent)");
  const [keyArgs] = ledger.of("reserve");
  t.strictSame(ledger.of("release"), [[keyArgs?.[0]]], "the key's reservation released");
  t.strictSame(await fits(ledger, keyPlace, 10_000), { admitted: true }, "nothing held of the key's budget");
  ledger.failNext.set("release", new Error("ledger down"));
  const again = await rejectedWith(billing.admit(p, () => 10_000));
  t.equal(again.message, error.message, "the project's refusal, not the release's failure");
  t.equal(ledger.of("release").length, 2);
});

// $0.001 a month: a call estimated at 1,000 takes a lease of an eighth of it (125,000 nano-dollars).
const leaseBudget = (alert_thresholds: number[] = []): StoredBudget => budget(true, 0.001, alert_thresholds);

t.test("under both, the project's refusal gives a key's lease ticket back whole", async (t) => {
  const { billing, ledger } = setup(t);
  const p = payer("prj_bl");
  const keyPlace = { project_id: "prj_bl", api_key_id: p.api_key_id, period: "2026-03" };
  await ledger.inner.putBudget("prj_bl", budget(true));
  await ledger.inner.putBudget("prj_bl", leaseBudget(), p.api_key_id);
  await spend(ledger, "prj_bl", 10_000);
  await rejectedWith(billing.admit(p, () => 1000));
  t.equal(ledger.of("reserveParts").length, 1, "the key's lease taken");
  t.strictSame(ledger.of("release"), [], "a ticket goes back to its lease, not the ledger");
  await billing.putBudget("prj_bl", budget(false));
  const tickets: LeaseTicket[] = [];
  for (let i = 0; i < 125; i++) {
    const ticket = await billing.admit(p, () => 1000);
    if (!(ticket instanceof LeaseTicket)) return t.fail(`ticket ${i}`);
    tickets.push(ticket);
  }
  t.equal(new Set(tickets.map((ticket) => ticket.lease)).size, 1, "all 125,000 of the lease admit again");
  t.equal(ledger.of("reserveParts").length, 1);
  for (const ticket of tickets) await billing.settle(ticket, undefined);
  await billing.stop();
  t.strictSame(await fits(ledger, keyPlace, 1_000_000), { admitted: true }, "the lease went back at stop: no call was left in it");
});

t.test("a zero estimate keeps the per-call rule, beside a lease or without one", async (t) => {
  const { billing, ledger } = setup(t);
  await ledger.inner.putBudget("prj_zero", leaseBudget());
  await ledger.inner.putBudget("prj_zero2", leaseBudget());
  const fresh = await billing.admit(payer("prj_zero2"), () => 0);
  t.notOk(fresh instanceof LeaseTicket);
  t.strictSame(ledger.of("reserveParts"), [], "no lease for a zero estimate");
  const ticket = await billing.admit(payer("prj_zero"), () => 1000);
  t.ok(ticket instanceof LeaseTicket, "a lease for a priced call");
  t.strictSame(ledger.of("reserveParts").map((args) => args.slice(0, 4)), [[{ project_id: "prj_zero", period: "2026-03" }, [{ id: (ticket as LeaseTicket).lease.reservation.id, amount_nanos: 125_000 }], startMs + 15 * minute, startMs]], "the lease held for fifteen minutes");
  const zero = await billing.admit(payer("prj_zero"), () => 0);
  t.notOk(zero instanceof LeaseTicket, "a zero estimate does not take from the lease");
  t.strictSame(ledger.of("reserve").map((args) => args[1]), [0, 0]);
  t.equal(ledger.of("reserveParts").length, 1);
});

t.test("a refusal while an idle lease is held returns the lease and asks once more", async (t) => {
  const { billing, ledger } = setup(t);
  await ledger.inner.putBudget("prj_idle", leaseBudget());
  const p = payer("prj_idle");
  const ticket = await billing.admit(p, () => 1000);
  if (!(ticket instanceof LeaseTicket)) return t.fail("a lease");
  await billing.settle(ticket, usageRecord({ project_id: "prj_idle", cost_nanos: 1000, usage_key: "call1" }));
  await spend(ledger, "prj_idle", 875_000); // 875,000 spent + the lease's 125,000 = the limit
  const admitted = await billing.admit(p, () => 0);
  t.ok(admitted, "admitted on the second ask");
  t.notOk(admitted instanceof LeaseTicket);
  t.equal(ledger.of("reserve").length, 2);
  t.equal(await ledger.spent("prj_idle", "2026-03"), 876_000, "the lease's return billed its call");
});

t.test("still refused after the idle lease went back: the second answer's figures", async (t) => {
  const { billing, ledger } = setup(t);
  await ledger.inner.putBudget("prj_idle2", leaseBudget());
  const p = payer("prj_idle2");
  const ticket = await billing.admit(p, () => 1000);
  if (!(ticket instanceof LeaseTicket)) return t.fail("a lease");
  await billing.settle(ticket, usageRecord({ project_id: "prj_idle2", cost_nanos: 1000, usage_key: "call1" }));
  await spend(ledger, "prj_idle2", 999_000);
  const error = await rejectedWith(billing.admit(p, () => 0));
  t.equal(error.message, "the project's monthly budget of 0.001 USD is used up (0.001 USD spent)");
  t.strictSame(error.details, { limit_usd: 0.001, spent_usd: 0.001, reserved_usd: 0, period: "2026-03" });
  t.equal(ledger.of("reserve").length, 2);
});

t.test("a key's idle lease is returned for a key's call refused by the ledger", async (t) => {
  const { billing, ledger } = setup(t);
  const p = payer("prj_kidle");
  await ledger.inner.putBudget("prj_kidle", leaseBudget(), p.api_key_id);
  const ticket = await billing.admit(p, () => 1000);
  if (!(ticket instanceof LeaseTicket)) return t.fail("a lease");
  await billing.settle(ticket, usageRecord({ project_id: "prj_kidle", api_key_id: p.api_key_id, cost_nanos: 1000, usage_key: "call1" }));
  await spend(ledger, "prj_kidle", 875_000, p.api_key_id);
  t.ok(await billing.admit(p, () => 0), "admitted once the key's lease went back");
  t.equal(await ledger.spent("prj_kidle", "2026-03", p.api_key_id), 876_000);
});

t.test("a change made here is broadcast, with the budget's scope, and forgotten at once", async (t) => {
  const { billing, ledger, store } = setup(t);
  const messages: string[] = [];
  await store.subscribe("budget-changed", (message) => void messages.push(message));
  const p = payer("prj_put");
  t.equal(await billing.admit(p, () => 1000), undefined, "no budget yet");
  await billing.putBudget("prj_put", budget(true));
  t.ok(await billing.admit(p, () => 1000), "the project's new hard limit applies at once");
  await billing.putBudget("prj_put", budget(true), p.api_key_id);
  t.ok((await billing.admit(p, () => 1000)) instanceof BothBudgets, "and the key's");
  t.strictSame(messages, ["prj_put", `prj_put\t${p.api_key_id}`]);
  t.strictSame(ledger.of("putBudget"), [
    ["prj_put", budget(true), undefined],
    ["prj_put", budget(true), p.api_key_id],
  ]);
});

t.test("another replica's change is heard once started: a project's retires the project's lease, a key's the key's", async (t) => {
  const { billing, ledger, other } = setup(t);
  await billing.start();
  const replica = other();
  const p = payer("prj_bc");
  t.equal(await billing.admit(p, () => 1000), undefined);
  await replica.putBudget("prj_bc", leaseBudget());
  const first = await billing.admit(p, () => 1000);
  if (!(first instanceof LeaseTicket)) return t.fail("the broadcast was heard: a lease");
  await billing.settle(first, undefined);
  await replica.putBudget("prj_bc", budget(false), p.api_key_id);
  const sameLease = await billing.admit(p, () => 1000);
  if (!(sameLease instanceof LeaseTicket)) return t.fail("a ticket");
  t.equal(sameLease.lease, first.lease, "a key's change leaves the project's lease");
  await billing.settle(sameLease, undefined);
  await replica.putBudget("prj_bc", leaseBudget());
  const renewed = await billing.admit(p, () => 1000);
  if (!(renewed instanceof LeaseTicket)) return t.fail("a ticket");
  t.not(renewed.lease, first.lease, "the project's change retired its lease");
  await billing.settle(renewed, undefined);
  // The key's lease, beside a project without a hard limit.
  const k = payer("prj_kbc");
  await ledger.inner.putBudget("prj_kbc", leaseBudget(), k.api_key_id);
  const keyFirst = await billing.admit(k, () => 1000);
  if (!(keyFirst instanceof LeaseTicket)) return t.fail("a key's lease");
  await billing.settle(keyFirst, undefined);
  await replica.putBudget("prj_kbc", budget(false));
  const keySame = await billing.admit(k, () => 1000);
  if (!(keySame instanceof LeaseTicket)) return t.fail("a ticket");
  t.equal(keySame.lease, keyFirst.lease, "a project's change leaves the key's lease");
  await billing.settle(keySame, undefined);
  await replica.putBudget("prj_kbc", leaseBudget(), k.api_key_id);
  const keyRenewed = await billing.admit(k, () => 1000);
  if (!(keyRenewed instanceof LeaseTicket)) return t.fail("a ticket");
  t.not(keyRenewed.lease, keyFirst.lease, "the key's change retired the key's lease");
  await billing.settle(keyRenewed, undefined);
});

const records = (n: number, project_id: string): UsageRecord[] => Array.from({ length: n }, (_, i) => usageRecord({ project_id, cost_nanos: 1, usage_key: `${project_id}_${i}` }));

t.test("a write goes in Redis's steps of 500, the first at once and each later one after a turn of the event loop", async (t) => {
  const { billing, ledger } = setup(t, { kind: "redis" });
  const writing = billing.write(records(1001, "prj_w"));
  t.equal(ledger.of("append").length, 1, "the first step is asked at once, alone");
  await writing;
  t.strictSame(
    ledger.of("append").map(([batch]) => (batch as UsageRecord[]).length),
    [500, 500, 1],
  );
  t.equal(await ledger.spent("prj_w", "2026-03"), 1001);
});

t.test("an embedded write goes in steps of 1,024", async (t) => {
  const { billing, ledger } = setup(t);
  await billing.write(records(1025, "prj_we"));
  t.strictSame(
    ledger.of("append").map(([batch]) => (batch as UsageRecord[]).length),
    [1024, 1],
  );
  await billing.write([]);
  t.equal(ledger.of("append").length, 2, "an empty batch asks nothing");
});

t.test("a failed step fails the write once the others landed and published their alerts", async (t) => {
  const { billing, ledger, published } = setup(t, { kind: "redis" });
  await ledger.inner.putBudget("prj_wf", budget(false, 0.000001, [0.1]));
  ledger.failAppendNo = 2;
  await t.rejects(billing.write(records(1001, "prj_wf")), { message: "disk full" });
  t.equal(await ledger.spent("prj_wf", "2026-03"), 501, "the first and third steps landed");
  t.match(published, [{ type: "budget.alert", data: { threshold: 0.1 } }]);
  t.equal(published.length, 1);
});

t.test("the recorder's write takes its records off the project's and the key's lease returns", async (t) => {
  const { billing, ledger } = setup(t);
  const p = payer("prj_ap");
  const k = payer("prj_ak");
  await ledger.inner.putBudget("prj_ap", leaseBudget());
  await ledger.inner.putBudget("prj_ak", leaseBudget(), k.api_key_id);
  const projectTicket = await billing.admit(p, () => 1000);
  const keyTicket = await billing.admit(k, () => 1000);
  if (!(projectTicket instanceof LeaseTicket) || !(keyTicket instanceof LeaseTicket)) return t.fail("leases");
  const projectRecord = usageRecord({ project_id: "prj_ap", cost_nanos: 700, usage_key: "c1" });
  const keyRecord = usageRecord({ project_id: "prj_ak", api_key_id: k.api_key_id, cost_nanos: 800, usage_key: "c2" });
  await billing.settle(projectTicket, projectRecord);
  await billing.settle(keyTicket, keyRecord);
  await billing.write([projectRecord, keyRecord]);
  await billing.stop();
  const returns = ledger.of("append").filter((args) => args.length === 2);
  t.strictSame(
    returns.map(([batch, settle]) => [(batch as UsageRecord[]).length, settle]),
    [
      [0, projectTicket.lease.reservation],
      [0, keyTicket.lease.reservation],
    ],
    "each return carries no record: the write had them",
  );
  t.equal(await ledger.spent("prj_ap", "2026-03"), 700);
  t.equal(await ledger.spent("prj_ak", "2026-03", k.api_key_id), 800);
});

t.test("a lease's return waits for the writes in flight", async (t) => {
  const { billing, ledger } = setup(t);
  const p = payer("prj_wait");
  await ledger.inner.putBudget("prj_wait", leaseBudget());
  const ticket = await billing.admit(p, () => 1000);
  if (!(ticket instanceof LeaseTicket)) return t.fail("a lease");
  const record = usageRecord({ project_id: "prj_wait", cost_nanos: 900, usage_key: "w1" });
  await billing.settle(ticket, record);
  let open: () => void = () => undefined;
  ledger.appendGate = new Promise<void>((resolve) => {
    open = () => resolve();
  });
  const writing = billing.write([record]);
  const stopping = billing.stop();
  await settleAll();
  t.equal(ledger.of("append").length, 1, "the return has not asked yet");
  ledger.appendGate = undefined;
  open();
  await writing;
  await stopping;
  t.strictSame(
    ledger.of("append").map((args) => (args[0] as UsageRecord[]).length),
    [1, 0],
    "the return carried nothing the write had",
  );
  t.equal(await ledger.spent("prj_wait", "2026-03"), 900);
});

t.test("stop returns the project's and the key's leases and publishes what their returns crossed", async (t) => {
  const { billing, ledger, published } = setup(t);
  const p = payer("prj_stop");
  await ledger.inner.putBudget("prj_stop", leaseBudget([0.5]));
  await ledger.inner.putBudget("prj_stop", leaseBudget(), p.api_key_id);
  const both = await billing.admit(p, () => 1000);
  if (!(both instanceof BothBudgets) || !(both.project instanceof LeaseTicket) || !(both.key instanceof LeaseTicket)) return t.fail("both from leases");
  await billing.settle(both, usageRecord({ project_id: "prj_stop", api_key_id: p.api_key_id, cost_nanos: 600_000, usage_key: "big" }));
  t.equal(await ledger.spent("prj_stop", "2026-03"), 0, "settled in memory");
  await billing.stop();
  t.equal(await ledger.spent("prj_stop", "2026-03"), 600_000);
  t.equal(await ledger.spent("prj_stop", "2026-03", p.api_key_id), 600_000);
  t.strictSame(await fits(ledger, { project_id: "prj_stop", period: "2026-03" }, 400_000), { admitted: true }, "the project's lease released");
  t.strictSame(await fits(ledger, { project_id: "prj_stop", api_key_id: p.api_key_id, period: "2026-03" }, 400_000), { admitted: true }, "the key's too");
  t.match(published, [{ type: "budget.alert", data: { threshold: 0.5, spent_usd: 0.0006 } }]);
  t.equal(published.length, 1);
});

t.test("a project's alert is published once, with its exact event, and acknowledged", async (t) => {
  const { billing, ledger, clock, published } = setup(t);
  await ledger.inner.putBudget("prj_al", budget(false, 0.00001, [0.5]));
  clock.ms = startMs + 1234;
  await billing.write([usageRecord({ project_id: "prj_al", cost_nanos: 6000, usage_key: "a1" })]);
  await billing.write([usageRecord({ project_id: "prj_al", cost_nanos: 1000, usage_key: "a2" })]);
  t.strictSame(published, [
    {
      id: "evt_budget_prj_al_2026-03_0.5",
      type: "budget.alert",
      organization_id: "org_1",
      project_id: "prj_al",
      environment_id: null,
      created_at: isoTime(startMs + 1234),
      data: { project_id: "prj_al", period: "2026-03", threshold: 0.5, limit_usd: 0.00001, spent_usd: 0.000006 },
    },
  ]);
  t.equal(ledger.of("ackAlert").length, 1);
  t.strictSame(await ledger.inner.pendingAlerts(), []);
});

t.test("a key's alert is published once, with its exact event, and acknowledged", async (t) => {
  const { billing, ledger, clock, published } = setup(t);
  const p = payer("prj_kal");
  await ledger.inner.putBudget("prj_kal", budget(false, 0.00001, [0.5]), p.api_key_id);
  clock.ms = startMs + 4321;
  await billing.write([usageRecord({ project_id: "prj_kal", api_key_id: p.api_key_id, cost_nanos: 7000, usage_key: "k1" })]);
  t.strictSame(published, [
    {
      id: `evt_key_budget_${p.api_key_id}_2026-03_0.5`,
      type: "key.budget.alert",
      organization_id: "org_1",
      project_id: "prj_kal",
      environment_id: null,
      created_at: isoTime(startMs + 4321),
      data: { api_key_id: p.api_key_id, project_id: "prj_kal", period: "2026-03", threshold: 0.5, budget_usd: 0.00001, spent_usd: 0.000007 },
    },
  ]);
  t.equal(ledger.of("ackAlert").length, 1);
  t.strictSame(await ledger.inner.pendingAlerts(), []);
});

t.test("an alert the publisher refuses is logged and stays pending; the next alert still goes out", async (t) => {
  const { billing, ledger, published, refused, lines } = setup(t);
  const p = payer("prj_ref");
  await ledger.inner.putBudget("prj_ref", budget(false, 0.00001, [0.5, 0.8]));
  await ledger.inner.putBudget("prj_ref", budget(false, 0.00001, [0.5, 0.8]), p.api_key_id);
  refused.add("evt_budget_prj_ref_2026-03_0.5");
  refused.add(`evt_key_budget_${p.api_key_id}_2026-03_0.5`);
  await billing.write([usageRecord({ project_id: "prj_ref", api_key_id: p.api_key_id, cost_nanos: 9000, usage_key: "r1" })]);
  t.strictSame(published.map((event) => event.id).sort(), [`evt_budget_prj_ref_2026-03_0.8`, `evt_key_budget_${p.api_key_id}_2026-03_0.8`]);
  const warnings = lines.filter((line) => line.level === "warn");
  t.equal(warnings.length, 2);
  for (const line of warnings) {
    t.equal(line.msg, "budget.alert not published yet; will retry");
    t.match(line.fields, { project_id: "prj_ref", threshold: 0.5, error: { message: "webhooks unavailable" } });
  }
  t.strictSame((await ledger.inner.pendingAlerts()).map((alert) => [alert.api_key_id, alert.threshold]).sort(), [
    [p.api_key_id, 0.5],
    [undefined, 0.5],
  ].sort());
});

t.test("without a publisher, alerts are acknowledged (nothing to publish them to)", async (t) => {
  const { billing, ledger, lines } = setup(t, { events: false });
  await ledger.inner.putBudget("prj_none", budget(false, 0.00001, [0.5]));
  await billing.write([usageRecord({ project_id: "prj_none", cost_nanos: 6000, usage_key: "n1" })]);
  t.strictSame(await ledger.inner.pendingAlerts(), []);
  t.strictSame(lines, []);
});

t.test("pending alerts go out at start and every 30 seconds, until stop", async (t) => {
  const { billing, ledger, published, refused } = setup(t);
  mock.timers.enable({ apis: ["setInterval"] });
  t.teardown(() => mock.timers.reset());
  await ledger.inner.putBudget("prj_rp", budget(false, 0.00001, [0.2, 0.4, 0.6]));
  const ids = ["evt_budget_prj_rp_2026-03_0.2", "evt_budget_prj_rp_2026-03_0.4", "evt_budget_prj_rp_2026-03_0.6"];
  const publishedIds = () => [...new Set(published.map((event) => event.id))];
  /** Waits (a few real milliseconds, usually) until every alert published is acknowledged too. */
  const acknowledged = (count: number) => until(async () => publishedIds().length === count && (await ledger.inner.pendingAlerts()).length === 0);
  for (const id of ids) refused.add(id);
  await billing.write([usageRecord({ project_id: "prj_rp", cost_nanos: 2500, usage_key: "p1" })]);
  t.strictSame(published, []);
  refused.clear();
  await billing.start();
  await acknowledged(1);
  t.strictSame(publishedIds(), [ids[0]], "published at start");
  refused.add(ids[1] ?? "");
  await billing.write([usageRecord({ project_id: "prj_rp", cost_nanos: 2500, usage_key: "p2" })]);
  refused.clear();
  mock.timers.tick(29_999);
  await settleAll();
  t.strictSame(publishedIds(), [ids[0]], "not before 30 seconds");
  mock.timers.tick(1);
  await acknowledged(2);
  t.strictSame(publishedIds(), [ids[0], ids[1]], "at 30 seconds");
  refused.add(ids[2] ?? "");
  await billing.write([usageRecord({ project_id: "prj_rp", cost_nanos: 2500, usage_key: "p3" })]);
  refused.clear();
  await billing.stop();
  mock.timers.tick(60_000);
  await settleAll();
  t.strictSame(publishedIds(), [ids[0], ids[1]], "none after stop");
  t.equal((await ledger.inner.pendingAlerts()).length, 1);
});

t.test("pending alerts that cannot be read are logged, and start still resolves", async (t) => {
  const { billing, ledger, lines } = setup(t);
  ledger.failNext.set("pendingAlerts", new Error("ledger down"));
  await billing.start();
  await settleAll();
  t.match(lines, [{ level: "warn", msg: "pending budget alerts could not be read", fields: { error: { message: "ledger down" } } }]);
  t.equal(lines.length, 1);
});
