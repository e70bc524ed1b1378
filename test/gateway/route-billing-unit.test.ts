// Route billing (gateway/route-billing.ts) built in process: admitRoute for
// each declaration ("reserve", "under-limit", "hold") and the RouteBill it
// answers, against budgets that record every step and answer as told and a
// UsageMeter on a fixed clock whose sink records what it gets: who pays
// (the declared payer or the calling key), when the ledger is asked (and for
// how much), what is settled or released and when, that a bill or a release
// happens once, a cache hit's record, and a ledger that fails. Fast on
// purpose: the mutation run (stryker.config.json) runs this file once per
// mutant; the server around it (HTTP and WebSocket) is in route-billing.test.ts.
import t from "tap";
import { TroupeError } from "../../core/errors.ts";
import type { CallBilling } from "../../gateway/billed-call.ts";
import { cacheRequestOf, withCacheRequest } from "../../gateway/cache/cache-request.ts";
import { ResponseState } from "../../gateway/http-io.ts";
import { admitRoute, RouteBill, type BillableContext, type RouteBilling } from "../../gateway/route-billing.ts";
import { Catalogue } from "../../providers/catalogue.ts";
import { UsageMeter, type Payer, type UsageContext, type UsageRecord } from "../../providers/usage.ts";
import type { Reservation } from "../../tenancy/ledger.ts";
import type { ApiKeyRecord } from "../../tenancy/types.ts";

const now = Date.UTC(2026, 10, 15, 12);
const catalogue = Catalogue.load();
const key = { id: "key_live", organization_id: "org_1", project_id: "prj_1", environment_id: "env_1", live: true } as unknown as ApiKeyRecord;
const apiKeyCtx: BillableContext = { auth: { kind: "api_key", key }, requestId: "req_1" };
const sessionCtx: BillableContext = { auth: { kind: "session", userId: "u", sessionId: "s", tokenHash: "h", csrfToken: "c", viaCookie: false }, requestId: "req_2" };
const keyContext: UsageContext = { organization_id: "org_1", project_id: "prj_1", environment_id: "env_1", api_key_id: "key_live", live: true, request_id: "req_1" };
const otherPayer: UsageContext = { organization_id: "org_2", project_id: "prj_2", environment_id: "env_2", api_key_id: "key_other", live: true, request_id: "req_other" };
const figures = { model: "gpt-4.1-mini", provider: "openai", input_tokens: 1000, output_tokens: 500 };

/** Budgets that record each step; `answer` decides what admit returns. */
class Budgets implements CallBilling {
  steps: string[] = [];
  payers: Payer[] = [];
  settled: { reservation: Reservation; record: UsageRecord | undefined }[] = [];
  answer: "sync" | "reserve" | "nothing" | "refuse" = "reserve";
  failSettle = false;
  private next = 0;
  admit(payer: Payer, estimateNanos: () => number): undefined | Promise<Reservation | undefined> {
    this.payers.push(payer);
    if (this.answer === "sync") {
      this.steps.push("admit sync");
      return undefined;
    }
    const estimate = estimateNanos();
    if (this.answer === "refuse") {
      this.steps.push(`refuse ${estimate}`);
      return Promise.reject(new TroupeError("budget_exceeded", "the project's monthly budget is used up"));
    }
    if (this.answer === "nothing") {
      this.steps.push(`admit ${estimate} (nothing reserved)`);
      return Promise.resolve(undefined);
    }
    const reservation: Reservation = { project_id: payer.project_id, period: "2026-11", id: `rsv_${++this.next}` };
    this.steps.push(`reserve ${reservation.id} ${estimate}`);
    return Promise.resolve(reservation);
  }
  settle(reservation: Reservation, record: UsageRecord | undefined): Promise<void> {
    this.settled.push({ reservation, record });
    this.steps.push(record ? `settle ${reservation.id} ${record.category} ${record.input_tokens}+${record.output_tokens}` : `release ${reservation.id}`);
    return this.failSettle ? Promise.reject(new Error("ledger unreachable")) : Promise.resolve();
  }
}

interface Rig {
  budgets: Budgets;
  meter: UsageMeter;
  records: UsageRecord[];
  /** What the sink's recordGrouped returns (the promise a bill waits for). */
  grouped: Promise<void>;
}

function rig(): Rig {
  const records: UsageRecord[] = [];
  const grouped = Promise.resolve();
  const meter = new UsageMeter(catalogue, { record: (r) => void records.push(r), recordGrouped: (r) => (records.push(r), grouped) }, () => now);
  return { budgets: new Budgets(), meter, records, grouped };
}

t.test("RouteBill.bill without a billed call declared throws", async (t) => {
  const r = rig();
  const message = 'ctx.bill on a route that declares no billed call (billing.admit "reserve")';
  t.throws(() => new RouteBill(undefined, "chat", keyContext).bill(figures), { message }, "no meter");
  t.throws(() => new RouteBill(r.meter, undefined, keyContext).bill(figures), { message }, "no category");
  t.throws(() => new RouteBill(undefined, undefined, keyContext, r.budgets, { project_id: "prj_1", period: "2026-11", id: "rsv_x" }).bill(figures), { message }, "a hold's bill");
  t.equal(r.records.length, 0);
});

t.test("RouteBill.bill with nothing reserved records the call (grouped), every time", async (t) => {
  const r = rig();
  const unreserved = new RouteBill(r.meter, "vision", keyContext);
  t.equal(unreserved.bill(figures), r.grouped, "the sink's grouped write is what the answer waits for");
  t.equal(unreserved.bill(figures), r.grouped, "a second report is recorded too (nothing reserved, nothing to settle once)");
  t.equal(r.records.length, 2);
  t.match(r.records[0], { category: "vision", model: "gpt-4.1-mini", input_tokens: 1000, output_tokens: 500, api_key_id: "key_live", request_id: "req_1", created_at: new Date(now).toISOString() });
  t.notOk("cache" in (r.records[0] ?? {}), "not from the cache");
  t.equal(unreserved.release(), undefined, "nothing to release");

  t.equal(new RouteBill(r.meter, "chat", undefined).bill(figures), undefined, "no payer (a session): nothing recorded");
  const nobody = new RouteBill(r.meter, "chat", undefined, r.budgets, { project_id: "prj_1", period: "2026-11", id: "rsv_y" });
  t.equal(nobody.bill(figures), undefined, "a reservation but no payer: nothing recorded, nothing settled");
  t.equal(r.records.length, 2);

  const reservation: Reservation = { project_id: "prj_1", period: "2026-11", id: "rsv_x" };
  const noBudgets = new RouteBill(r.meter, "chat", keyContext, undefined, reservation);
  t.equal(noBudgets.bill(figures), r.grouped, "a reservation without budgets: recorded");
  t.equal(noBudgets.release(), undefined);
  t.equal(r.records.length, 3);
  t.same(r.budgets.steps, []);
});

t.test("RouteBill.bill with a reservation settles it once at the real figures", async (t) => {
  const r = rig();
  const reservation: Reservation = { project_id: "prj_1", period: "2026-11", id: "rsv_7" };
  const held = new RouteBill(r.meter, "chat", keyContext, r.budgets, reservation);
  const first = held.bill(figures);
  t.ok(first instanceof Promise, "settling is I/O");
  t.same(r.records, [], "the sink hears of it only after the ledger settled");
  await first;
  t.same(r.budgets.steps, ["settle rsv_7 chat 1000+500"]);
  t.equal(r.budgets.settled[0]?.reservation, reservation);
  t.match(r.budgets.settled[0]?.record, { category: "chat", request_id: "req_1", api_key_id: "key_live", created_at: new Date(now).toISOString() });
  t.equal(r.records.length, 1, "and the usual sinks");
  t.equal(r.records[0], r.budgets.settled[0]?.record, "the same record");
  t.equal(held.bill(figures), undefined, "a second report settles nothing");
  t.equal(held.release(), undefined, "nor is a settled reservation released");
  t.same(r.budgets.steps, ["settle rsv_7 chat 1000+500"]);
  t.equal(r.records.length, 1);
});

t.test("a ledger that fails to settle: the bill still answers and the record still goes to the sinks", async (t) => {
  const r = rig();
  r.budgets.failSettle = true;
  const held = new RouteBill(r.meter, "chat", keyContext, r.budgets, { project_id: "prj_1", period: "2026-11", id: "rsv_1" });
  await t.resolves(Promise.resolve(held.bill(figures)));
  t.equal(r.records.length, 1);
  const other = new RouteBill(r.meter, "chat", keyContext, r.budgets, { project_id: "prj_1", period: "2026-11", id: "rsv_2" });
  const released = other.release();
  t.ok(released instanceof Promise);
  t.equal(await released, undefined, "a failed release resolves (the reservation expires on its own)");
});

t.test("a cache hit is billed as one", async (t) => {
  const r = rig();
  const request = cacheRequestOf(key, {}, new ResponseState(), "req_1");
  request.outcome = "hit";
  await withCacheRequest(request, () => new RouteBill(r.meter, "chat", keyContext).bill(figures));
  t.equal(r.records[0]?.cache, "hit");
  const held = new RouteBill(r.meter, "chat", keyContext, r.budgets, { project_id: "prj_1", period: "2026-11", id: "rsv_1" });
  await withCacheRequest(request, () => held.bill(figures));
  t.equal(r.budgets.settled[0]?.record?.cache, "hit", "the settled record too");
  request.outcome = "miss";
  await withCacheRequest(request, () => new RouteBill(r.meter, "chat", keyContext).bill(figures));
  t.notOk("cache" in (r.records[2] ?? {}), "a miss is a provider call");
  t.equal(figures.input_tokens, 1000);
  t.notOk("cache" in figures, "the handler's figures are left alone");
});

t.test("RouteBill.release releases a reservation once", async (t) => {
  const r = rig();
  const reservation: Reservation = { project_id: "prj_1", period: "2026-11", id: "rsv_3" };
  const held = new RouteBill(r.meter, "chat", keyContext, r.budgets, reservation);
  const released = held.release();
  t.ok(released instanceof Promise);
  await released;
  t.same(r.budgets.steps, ["release rsv_3"]);
  t.equal(r.budgets.settled[0]?.reservation, reservation);
  t.equal(r.budgets.settled[0]?.record, undefined);
  t.equal(held.release(), undefined, "twice: nothing more");
  t.equal(held.bill(figures), undefined, "a released reservation is not billed after");
  t.same(r.budgets.steps, ["release rsv_3"]);
  t.equal(r.records.length, 0);
});

t.test('admitRoute "reserve"', async (t) => {
  const r = rig();
  let estimates = 0;
  const categories: BillableContext[] = [];
  const declared: RouteBilling<BillableContext> = {
    admit: "reserve",
    via: { billing: r.budgets, usage: r.meter },
    category: (ctx) => (categories.push(ctx), "vision"),
    estimate: () => (estimates += 1, 4242),
  };

  const admitted = admitRoute(declared, apiKeyCtx);
  t.ok(admitted instanceof Promise, "a live key under a hard limit: one ledger step");
  const routeBill = await admitted;
  t.same(r.budgets.steps, ["reserve rsv_1 4242"]);
  t.same(r.budgets.payers, [keyContext], "the calling key pays");
  t.equal(categories[0], apiKeyCtx, "the category function gets the request");
  await routeBill.bill(figures);
  t.same(r.budgets.steps, ["reserve rsv_1 4242", "settle rsv_1 vision 1000+500"]);

  r.budgets.answer = "sync";
  const sync = admitRoute(declared, apiKeyCtx);
  t.notOk(sync instanceof Promise, "the budgets answer at once (a test key): synchronous");
  t.equal(estimates, 1, "and not estimated");
  await (sync as RouteBill).bill(figures);
  t.equal(r.records.length, 2, "recorded, as nothing was reserved");
  t.equal(r.records[1]?.category, "vision");
  t.equal((sync as RouteBill).release(), undefined);

  r.budgets.answer = "nothing";
  const none = await admitRoute(declared, apiKeyCtx);
  t.equal(none.release(), undefined, "admitted with nothing reserved: nothing to release");
  const settledBefore = r.budgets.settled.length;
  t.equal(none.bill(figures), r.grouped, "and the call is recorded (grouped), not settled");
  t.equal(r.budgets.settled.length, settledBefore, "no settle without a reservation");
  t.equal(r.records.length, 3);

  const steps = r.budgets.steps.length;
  const session = admitRoute(declared, sessionCtx);
  t.notOk(session instanceof Promise, "a session: synchronous");
  t.equal(r.budgets.steps.length, steps, "not asked of the budgets");
  t.equal((session as RouteBill).bill(figures), undefined, "and not billed");

  const noBudgets = admitRoute({ ...declared, via: { usage: r.meter } }, apiKeyCtx);
  t.notOk(noBudgets instanceof Promise, "no budgets: synchronous");
  t.equal(r.budgets.steps.length, steps);
  await (noBudgets as RouteBill).bill(figures);
  t.equal(r.records.length, 4, "recorded");

  r.budgets.answer = "reserve";
  const paid = await admitRoute({ ...declared, category: "chat", payer: () => otherPayer }, sessionCtx);
  t.same(r.budgets.payers.at(-1), otherPayer, "a declared payer pays, even for a session");
  await paid.bill(figures);
  t.match(r.budgets.settled.at(-1)?.record, { category: "chat", api_key_id: "key_other", request_id: "req_other" });

  r.budgets.answer = "refuse";
  await t.rejects(Promise.resolve(admitRoute(declared, apiKeyCtx)), { code: "budget_exceeded" }, "402 at the hard limit");
});

t.test('admitRoute "under-limit"', async (t) => {
  const r = rig();
  const declared: RouteBilling<BillableContext> = { admit: "under-limit", via: { billing: r.budgets } };

  const admitted = admitRoute(declared, apiKeyCtx);
  t.ok(admitted instanceof Promise);
  const nothingHeld = await admitted;
  t.same(r.budgets.steps, ["reserve rsv_1 0", "release rsv_1"], "only the admission counted: reserved 0, released before the handler");
  t.same(r.budgets.payers, [keyContext]);
  t.throws(() => nothingHeld.bill(figures), { message: /declares no billed call/ }, "nothing for ctx.bill");
  t.equal(nothingHeld.release(), undefined, "nothing to release");

  r.budgets.answer = "nothing";
  t.equal(await admitRoute(declared, apiKeyCtx), nothingHeld, "admitted with nothing reserved");
  t.same(r.budgets.steps.slice(2), ["admit 0 (nothing reserved)"], "nothing to release");

  r.budgets.answer = "sync";
  t.equal(admitRoute(declared, apiKeyCtx), nothingHeld, "the budgets answer at once: synchronous");

  const steps = r.budgets.steps.length;
  t.equal(admitRoute(declared, sessionCtx), nothingHeld, "a session: synchronous");
  t.equal(r.budgets.steps.length, steps, "not asked of the budgets");
  t.equal(admitRoute({ admit: "under-limit", via: {} }, apiKeyCtx), nothingHeld, "no budgets");

  r.budgets.answer = "reserve";
  await admitRoute({ ...declared, payer: () => otherPayer }, sessionCtx);
  t.same(r.budgets.payers.at(-1), otherPayer, "a declared payer");
  t.equal(await admitRoute({ ...declared, payer: () => undefined }, apiKeyCtx), nothingHeld, "a declared payer of nobody");
  t.equal(r.budgets.payers.length, 4, "a payer of nobody is not asked of the budgets");

  r.budgets.answer = "refuse";
  await t.rejects(Promise.resolve(admitRoute(declared, apiKeyCtx)), { code: "budget_exceeded" });
  t.equal(r.budgets.steps.at(-1), "refuse 0");
});

t.test('admitRoute "hold"', async (t) => {
  const r = rig();
  const estimated: BillableContext[] = [];
  let estimate: number | Promise<number> = 777;
  const declared: RouteBilling<BillableContext> = { admit: "hold", via: { billing: r.budgets }, estimate: (ctx) => (estimated.push(ctx), estimate) };
  const nothingHeld = admitRoute({ admit: "under-limit", via: {} }, apiKeyCtx);

  const held = await admitRoute(declared, apiKeyCtx);
  t.same(r.budgets.steps, ["reserve rsv_1 777"]);
  t.same(r.budgets.payers, [keyContext]);
  t.equal(estimated[0], apiKeyCtx, "the estimate gets the request");
  t.not(held, nothingHeld, "a held reservation");
  t.throws(() => held.bill(figures), { message: /declares no billed call/ }, "its parts are billed elsewhere");
  await held.release();
  t.same(r.budgets.steps, ["reserve rsv_1 777", "release rsv_1"], "released when the handler ends");
  t.equal(r.budgets.settled[0]?.record, undefined);

  estimate = Promise.resolve(555);
  const later = admitRoute(declared, apiKeyCtx);
  t.ok(later instanceof Promise);
  await (await later).release();
  t.same(r.budgets.steps.slice(2), ["reserve rsv_2 555", "release rsv_2"], "an estimate that reads is awaited");

  estimate = 0;
  r.budgets.answer = "nothing";
  t.equal(await admitRoute(declared, apiKeyCtx), nothingHeld, "admitted with nothing reserved: nothing held");
  r.budgets.answer = "sync";
  t.equal(admitRoute(declared, apiKeyCtx), nothingHeld, "the budgets answer at once: synchronous");

  const calls = estimated.length;
  t.equal(admitRoute(declared, sessionCtx), nothingHeld, "a session: nothing held");
  t.equal(admitRoute({ admit: "hold", via: {}, estimate: () => 1 }, apiKeyCtx), nothingHeld, "no budgets");
  t.equal(estimated.length, calls, "and not estimated");

  r.budgets.answer = "reserve";
  estimate = 5;
  await admitRoute({ ...declared, payer: () => otherPayer }, sessionCtx);
  t.same(r.budgets.payers.at(-1), otherPayer, "a declared payer");

  r.budgets.answer = "refuse";
  await t.rejects(Promise.resolve(admitRoute(declared, apiKeyCtx)), { code: "budget_exceeded" });
  t.equal(r.budgets.steps.at(-1), "refuse 5");
});
