// A key's own budget under leases (tenancy/budget-leases.ts, the key's
// BudgetLeases in tenancy/billing.ts) on two replicas sharing one ledger —
// one embedded ledger shared in this process, and one Redis with a client
// per replica: a key budget worth exactly N calls answers exactly N of waves
// of concurrent calls sent to both, and leaves the key's spend at the limit;
// with the project's budget hard and smaller, the project's stops the key
// there instead, both budgets leased at once. Each replica's usage recorder
// is a slow flush, so leases return before the recorder has their records.
import t, { type Test } from "tap";
import { isoTime } from "../../core/clock.ts";
import { leaseMaxAgeMs } from "../../tenancy/budget-leases.ts";
import { periodOf, type StoredBudget } from "../../tenancy/ledger.ts";
import { startLeaseLedgers, stopReplica, type Replica } from "../support/lease-replicas.ts";
import { usageRecord } from "../support/usage-record.ts";

t.setTimeout(120_000);
const { clock, embedded, shared, replica } = await startLeaseLedgers("key-leases");
const costNanos = 1_000_000; // each call's estimate and real cost: $0.001

async function call(r: Replica, projectId: string, keyId: string): Promise<"answered" | "refused-by-key" | "refused-by-project"> {
  const payer = { organization_id: "org_1", project_id: projectId, environment_id: "env_1", api_key_id: keyId, live: true };
  let reservation;
  try {
    reservation = await r.billing.admit(payer, () => costNanos);
  } catch (error) {
    const refusal = error as { code?: string; details?: { budget?: string } };
    if (refusal.code === "budget_exceeded") return refusal.details?.budget === "api_key" ? "refused-by-key" : "refused-by-project";
    throw error;
  }
  await new Promise((resolve) => setImmediate(resolve)); // the provider call
  const record = usageRecord({ project_id: projectId, api_key_id: keyId, cost_nanos: costNanos, created_at: isoTime(clock.now()) });
  if (reservation) await r.billing.settle(reservation, record);
  r.buffer.push(record);
  return "answered";
}

const hard = (calls: number): StoredBudget => ({ monthly_limit_usd: (calls * costNanos) / 1e9, alert_thresholds: [], hard_limit: true, updated_at: "2026-03-01T00:00:00.000Z" });

/** Waves of 120 concurrent calls (60 per replica) until two answer nothing after the leases went back. */
async function spend(t: Test, a: Replica, b: Replica, projectId: string, keyId: string, budgetCalls: number) {
  let answered = 0;
  const refusals = new Set<string>();
  for (let idle = 0, waves = 0; idle < 2 && waves < 20; waves++) {
    const outcomes = await Promise.all(Array.from({ length: 120 }, (_, i) => call(i % 2 === 0 ? a : b, projectId, keyId)));
    const now = outcomes.filter((o) => o === "answered").length;
    for (const o of outcomes) if (o !== "answered") refusals.add(o);
    answered += now;
    idle = now === 0 ? idle + 1 : 0;
    t.ok(answered <= budgetCalls, `wave ${waves}: ${answered} answered so far, never more than the budget holds`);
    await new Promise((resolve) => setTimeout(resolve, leaseMaxAgeMs + 200));
  }
  return { answered, refusals };
}

for (const [name, ledgers] of shared) {
  t.test(`${name}: a key budget worth exactly 200 calls, two replicas: exactly 200 answered, the key's spend at its limit`, async (t) => {
    const projectId = `prj_keylease_${name.slice(0, 5)}_${process.pid}`;
    const [a, b] = [replica(ledgers[0]), replica(ledgers[1])];
    await a.billing.putBudget(projectId, hard(200), "key_capped");
    const { answered, refusals } = await spend(t, a, b, projectId, "key_capped", 200);
    await stopReplica(a);
    await stopReplica(b);
    const period = periodOf(isoTime(clock.now()));
    t.equal(answered, 200, "every call the key's budget pays for is answered, not one more");
    t.same([...refusals], ["refused-by-key"], "refused by the key's budget");
    t.equal(await ledgers[0].spent(projectId, period, "key_capped"), 200 * costNanos, "the key's spend is exactly at its limit");
    t.equal(await ledgers[0].spent(projectId, period), 200 * costNanos, "the project's counts the same calls");
    t.ok((a.steps.get("reserveParts") ?? 0) + (b.steps.get("reserveParts") ?? 0) > 0, "key leases were taken");
  });

  t.test(`${name}: key (400 calls) and project (200 calls) both hard: the project's stops the key at exactly 200`, async (t) => {
    const projectId = `prj_bothlease_${name.slice(0, 5)}_${process.pid}`;
    const [a, b] = [replica(ledgers[0]), replica(ledgers[1])];
    await a.billing.putBudget(projectId, hard(400), "key_roomy");
    await a.billing.putBudget(projectId, hard(200));
    const { answered, refusals } = await spend(t, a, b, projectId, "key_roomy", 200);
    await stopReplica(a);
    await stopReplica(b);
    const period = periodOf(isoTime(clock.now()));
    t.equal(answered, 200, "exactly what the smaller (the project's) budget pays for");
    t.same([...refusals], ["refused-by-project"], "refused by the project's budget");
    t.equal(await ledgers[0].spent(projectId, period), 200 * costNanos, "the project's spend at its limit");
    t.equal(await ledgers[0].spent(projectId, period, "key_roomy"), 200 * costNanos, "the key's holds the same calls");
  });
}

t.test("embedded: a call the project's budget refuses gives its key-lease ticket back whole (no new key lease for refused calls)", async (t) => {
  const projectId = `prj_cancel_${process.pid}`;
  const a = replica(embedded);
  await a.billing.putBudget(projectId, hard(400), "key_cancel"); // key leases of 50 calls
  await a.billing.putBudget(projectId, hard(3)); // too small for a lease: per-call reservations
  const outcomes: string[] = [];
  // Sequential, well within one lease's life: 3 answered, then 60 refused by the project.
  for (let i = 0; i < 63; i++) outcomes.push(await call(a, projectId, "key_cancel"));
  t.same(outcomes.slice(0, 3), ["answered", "answered", "answered"]);
  t.same(new Set(outcomes.slice(3)), new Set(["refused-by-project"]));
  t.equal(a.steps.get("reserveParts"), 1, "one key lease served all 63 admissions: the 60 refused calls took nothing from it");
  await stopReplica(a);
});
