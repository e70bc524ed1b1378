// Billing over the embedded ledger: bill() is idempotent and durable; a
// budget.alert whose publish failed stays pending and goes out (same event
// id) when billing starts again; the admission fast path stays synchronous
// for test keys and projects without a hard limit.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { systemClock } from "../../core/clock.ts";
import { createLogger } from "../../core/log.ts";
import type { OrganizationEvent } from "../../core/organization-events.ts";
import { appendChunk, Billing } from "../../tenancy/billing.ts";
import { EmbeddedDataStore } from "../../tenancy/embedded-data-store.ts";
import { EmbeddedLedgerStore } from "../../tenancy/embedded-ledger-store.ts";
import { usage } from "./ledger-store-suite.ts";

const dir = mkdtempSync(join(tmpdir(), "troupe-billing-"));
const store = new EmbeddedDataStore(dir, systemClock);
const ledger = new EmbeddedLedgerStore(dir);
t.teardown(async () => {
  await ledger.close();
  await store.close();
});
const log = createLogger("silent");
const payer = { organization_id: "org_1", project_id: "prj_b", environment_id: "env_1", api_key_id: "key_1", live: true };

t.test("a video segment billed twice is billed once", async (t) => {
  const billing = new Billing({ ledger, store, clock: systemClock, log });
  const segment = usage({ project_id: "prj_video", category: "video", units: 5, cost_nanos: 250_000_000, request_id: "job:j1:segment:0", usage_key: "job:j1:segment:0" });
  await billing.bill(segment);
  await billing.bill(segment);
  t.equal(await ledger.spent("prj_video", "2026-03"), 250_000_000);
});

t.test("an alert whose publish failed is published again after a restart, with the same id", async (t) => {
  const published: OrganizationEvent[] = [];
  let fail = true;
  const events = {
    publish: async (event: OrganizationEvent) => {
      if (fail) throw new Error("webhooks unavailable");
      published.push(event);
    },
  };
  const first = new Billing({ ledger, store, clock: systemClock, log, events });
  await first.putBudget("prj_alert", { monthly_limit_usd: 0.00001, alert_thresholds: [0.5], hard_limit: false, updated_at: "2026-03-01T00:00:00.000Z" });
  await first.bill(usage({ project_id: "prj_alert", cost_nanos: 6000 }));
  t.same(published, [], "the publisher refused it");
  t.equal((await ledger.pendingAlerts()).length, 1, "it stays pending");
  fail = false;
  const restarted = new Billing({ ledger, store, clock: systemClock, log, events });
  await restarted.start();
  const deadline = Date.now() + 5000;
  // Published, then acknowledged: wait for both.
  while ((published.length === 0 || (await ledger.pendingAlerts()).length > 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  restarted.stop();
  t.match(published, [{ id: "evt_budget_prj_alert_2026-03_0.5", type: "budget.alert", organization_id: "org_1", data: { project_id: "prj_alert", period: "2026-03", threshold: 0.5, limit_usd: 0.00001, spent_usd: 0.000006 } }]);
  t.same(await ledger.pendingAlerts(), [], "acknowledged once published");
  await restarted.bill(usage({ project_id: "prj_alert", cost_nanos: 6000 }));
  t.equal(published.length, 1, "never again this period");
});

t.test("admission: synchronous for test keys and unlimited projects, reserves under a hard limit", async (t) => {
  const billing = new Billing({ ledger, store, clock: systemClock, log });
  let estimated = 0;
  const estimate = () => ((estimated += 1), 1000);
  t.equal(billing.admit({ ...payer, live: false }, estimate), undefined, "a test key: nothing to do");
  const first = billing.admit(payer, estimate);
  t.ok(first instanceof Promise, "an unknown project is read once");
  t.equal(await first, undefined, "no budget: no reservation");
  t.equal(billing.admit(payer, estimate), undefined, "then known: synchronous");
  t.equal(estimated, 0, "the estimate is never computed without a hard limit");
  await billing.putBudget(payer.project_id, { monthly_limit_usd: 0.000002, alert_thresholds: [], hard_limit: true, updated_at: "2026-03-01T00:00:00.000Z" });
  const reservation = await billing.admit(payer, estimate);
  t.ok(reservation, "reserved");
  t.equal(estimated, 1);
  const second = await billing.admit(payer, estimate);
  t.ok(second, "1,000 reserved < 2,000: admitted");
  await t.rejects(Promise.resolve(billing.admit(payer, estimate)), { code: "budget_exceeded", status: 402 }, "2,000 reserved: refused");
  await billing.settle(reservation!, undefined);
  await billing.settle(second!, usage({ project_id: payer.project_id, created_at: new Date().toISOString(), cost_nanos: 2500 }));
  await t.rejects(Promise.resolve(billing.admit(payer, estimate)), { code: "budget_exceeded" }, "2,500 spent: refused");
});

t.test("a flush is appended in steps; a failed step fails the flush and its retry bills each record once", async (t) => {
  let appends = 0;
  let failSecond = true;
  const flaky = new Proxy(ledger, {
    get(target, property, receiver) {
      if (property !== "append") return Reflect.get(target, property, receiver);
      return (...args: Parameters<typeof ledger.append>) => {
        appends += 1;
        if (failSecond && appends === 2) return Promise.reject(new Error("disk full"));
        return target.append(...args);
      };
    },
  });
  const billing = new Billing({ ledger: flaky, store, clock: systemClock, log });
  const batch = Array.from({ length: 2 * appendChunk.embedded + 40 }, () => usage({ project_id: "prj_steps", cost_nanos: 1000 }));
  await t.rejects(billing.write(batch), /disk full/, "the recorder is told, so it keeps the batch");
  t.ok(appends > 2, "the flush went in several steps, the ones after the failure too");
  t.equal(await ledger.spent("prj_steps", "2026-03"), (batch.length - appendChunk.embedded) * 1000, "the steps that succeeded are in the ledger");
  failSecond = false;
  await billing.write(batch);
  t.equal(await ledger.spent("prj_steps", "2026-03"), batch.length * 1000, "the retry adds the missing step only");
  t.equal((await ledger.records("prj_steps", "2026-03")).length, batch.length);
});
