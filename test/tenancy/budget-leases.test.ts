// Budget leases (tenancy/budget-leases.ts) on two replicas sharing one
// ledger — an embedded one shared in this process, and one Redis with a
// ledger client per replica: a budget worth exactly N calls answers exactly
// N of many concurrent calls sent to both (in waves until the budget is
// spent: a lease of the other replica may refuse a call early, never let one
// through late), the ledger ends at the limit, most calls took no ledger
// step; and the lease of a replica that died comes back once it expires.
// Each replica's usage recorder is simulated by a slow flush to
// Billing.write, so leases return before the recorder has their records
// (test/support/lease-replicas.ts).
import t from "tap";
import { isoTime, type Clock } from "../../core/clock.ts";
import { leaseMaxAgeMs } from "../../tenancy/budget-leases.ts";
import { periodOf } from "../../tenancy/ledger.ts";
import { startLeaseLedgers, stopReplica, type Replica } from "../support/lease-replicas.ts";
import { usage } from "./ledger-store-suite.ts";

t.setTimeout(120_000);
const { clock, shared, replica } = await startLeaseLedgers("leases");
const costNanos = 1_000_000; // each call's estimate and real cost: $0.001
const callsInBudget = 200; // a lease then holds 25 calls (an eighth of the limit)

/** One billed call as billed-call.ts runs it: admit, the provider, settle, then the record to the recorder. */
async function call(r: Replica, projectId: string, callClock: Clock = clock): Promise<"answered" | "refused"> {
  const payer = { organization_id: "org_1", project_id: projectId, environment_id: "env_1", api_key_id: "key_1", live: true };
  let reservation;
  try {
    reservation = await r.billing.admit(payer, () => costNanos);
  } catch (error) {
    if ((error as { code?: string }).code === "budget_exceeded") return "refused";
    throw error;
  }
  await new Promise((resolve) => setImmediate(resolve)); // the provider call
  const record = usage({ project_id: projectId, cost_nanos: costNanos, created_at: isoTime(callClock.now()) });
  if (reservation) await r.billing.settle(reservation, record);
  r.buffer.push(record);
  return "answered";
}

const hardBudget = { monthly_limit_usd: (callsInBudget * costNanos) / 1e9, alert_thresholds: [], hard_limit: true, updated_at: "2026-03-01T00:00:00.000Z" };

for (const [name, ledgers] of shared) {
  t.test(`${name}: two replicas, a budget worth exactly ${callsInBudget} calls: exactly ${callsInBudget} answered, the ledger at the limit`, async (t) => {
    const projectId = `prj_lease_${name.slice(0, 5)}_${process.pid}`;
    const [a, b] = [replica(ledgers[0]), replica(ledgers[1])];
    await a.billing.putBudget(projectId, hardBudget);
    let answered = 0;
    let waves = 0;
    const period = periodOf(isoTime(clock.now()));
    // Waves of 120 concurrent calls (60 per replica) until one answers nothing after the leases went back.
    for (let idle = 0; idle < 2 && waves < 20; waves++) {
      const outcomes = await Promise.all(Array.from({ length: 120 }, (_, i) => call(i % 2 === 0 ? a : b, projectId)));
      const now = outcomes.filter((o) => o === "answered").length;
      answered += now;
      idle = now === 0 ? idle + 1 : 0;
      t.ok(answered <= callsInBudget, `wave ${waves}: ${answered} answered so far, never more than the budget holds`);
      await new Promise((resolve) => setTimeout(resolve, leaseMaxAgeMs + 200)); // the leases go back
    }
    await stopReplica(a);
    await stopReplica(b);
    t.equal(answered, callsInBudget, "every call the budget pays for is answered, not one more");
    t.equal(await ledgers[0].spent(projectId, period), callsInBudget * costNanos, "the ledger is exactly at the limit");
    t.equal((await ledgers[0].records(projectId, period)).length, callsInBudget, "one record per answered call");
    t.ok((a.steps.get("reserveParts") ?? 0) + (b.steps.get("reserveParts") ?? 0) > 0, `leases were taken (${waves} waves)`);
  });

  t.test(`${name}: far from the limit, calls on two replicas take no ledger step to be admitted or settled`, async (t) => {
    const projectId = `prj_lease_far_${name.slice(0, 5)}_${process.pid}`;
    const [a, b] = [replica(ledgers[0]), replica(ledgers[1])];
    await a.billing.putBudget(projectId, { ...hardBudget, monthly_limit_usd: 1000 });
    a.steps.clear();
    for (let wave = 0; wave < 25; wave++) {
      const outcomes = await Promise.all(Array.from({ length: 32 }, (_, i) => call(i % 2 === 0 ? a : b, projectId)));
      t.equal(outcomes.filter((o) => o === "answered").length, 32, `wave ${wave}: all answered`);
    }
    const steps = (m: string) => (a.steps.get(m) ?? 0) + (b.steps.get(m) ?? 0);
    t.equal(steps("reserve"), 0, "no per-call reservation");
    t.ok(steps("reserveParts") <= 8, `${steps("reserveParts")} lease steps for 800 calls`);
    t.ok(steps("append") < 80, `${steps("append")} appends while the 800 calls ran (the recorder's aside): only the leases' returns`);
    await stopReplica(a);
    await stopReplica(b);
    t.equal(await ledgers[0].spent(projectId, periodOf(isoTime(clock.now()))), 25 * 32 * costNanos, "every call billed once");
  });

  t.test(`${name}: a dead replica's lease holds its money until it expires, then the other replica spends it`, async (t) => {
    const projectId = `prj_lease_dead_${name.slice(0, 5)}_${process.pid}`;
    let offsetMs = 0;
    const moved: Clock = { now: () => clock.now() + offsetMs };
    const [a, b] = [replica(ledgers[0], moved), replica(ledgers[1], moved)];
    await a.billing.putBudget(projectId, hardBudget);
    t.equal(await call(a, projectId, moved), "answered", "the first call takes a lease");
    await a.billing.write(a.buffer.splice(0));
    a.dead.value = true; // kill -9: its lease is never returned
    clearInterval(a.flusher);
    let answered = 1;
    while ((await call(b, projectId, moved)) === "answered") answered += 1;
    t.ok(answered < callsInBudget, `refused at ${answered} answered: the dead lease still holds money`);
    t.ok(answered >= callsInBudget - 25, "the dead lease holds no more than one lease's worth");
    offsetMs = 15 * 60_000 + 1_000; // past a reservation's life
    while ((await call(b, projectId, moved)) === "answered") answered += 1;
    await stopReplica(b);
    t.equal(answered, callsInBudget, "after the expiry the whole budget is spent, not one call more");
    t.equal(await ledgers[0].spent(projectId, periodOf(isoTime(moved.now()))), callsInBudget * costNanos, "the ledger is exactly at the limit");
  });
}
