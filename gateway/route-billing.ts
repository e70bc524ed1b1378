// Billing declared on a route (route.ts `billing`), run by the server around
// the handler (docs/api/usage-budgets-rate-limits.md): the route's payer is
// admitted against its project's budget BEFORE the handler runs (402, in the
// route's dialect, before any provider call), and after it the reservation is
// settled at the real cost the handler reported (`ctx.bill`) or released
// (nothing billed) when it reported nothing or failed. One place for HTTP
// routes (route-runner.ts) and WebSocket upgrades (ws-route.ts).
//
// The common path (a session, a test key, a project without a hard limit)
// stays synchronous: `admitRoute` then answers a RouteBill at once, no
// Promise and no await; only a hard-limited live project pays one atomic
// ledger step before the call and one after it (tenancy/billing.ts).
import type { UsageCategory, UsageContext, UsageFigures, UsageMeter } from "../providers/usage.ts";
import type { Reservation } from "../tenancy/ledger.ts";
import type { CallBilling } from "./billed-call.ts";
import { usageContextOf } from "./usage-context.ts";
import { servedFromCache } from "./cache/cache-request.ts";
import type { AuthContext } from "./auth-context.ts";

/** Where a route's calls are billed: the budgets (absent: nothing is refused, every call only recorded) and the meter. */
export interface BillingServices {
  billing?: CallBilling | undefined;
  usage: UsageMeter;
}

/** What the declarations below may read of a request: at least its credential and id. */
export interface BillableContext {
  auth: AuthContext;
  requestId: string;
}

interface Payable<Ctx> {
  /** Who pays: default the calling API key's usage context (a session call has none and is not billed). */
  payer?(ctx: Ctx): UsageContext | undefined;
}

/**
 * A call priced when it ends (chat, embeddings, images…): a hard-limited
 * project reserves `estimate` (the most it may cost, nano-dollars; run only
 * then, so counting tokens stays off the common path) or is refused 402; the
 * handler reports the call's figures with `ctx.bill`, which settles the
 * reservation at the real cost (or records the call when nothing was reserved).
 */
export interface ReservedCall<Ctx> extends Payable<Ctx> {
  admit: "reserve";
  via: BillingServices;
  /** What the call is billed as; a function when the body decides (a chat carrying images is billed as vision). */
  category: UsageCategory | ((ctx: Ctx) => UsageCategory);
  estimate(ctx: Ctx): number;
}

/**
 * Work whose parts are billed later, as they end (a video job's scenes):
 * admitted only while the project's spent + reserved is under its hard limit
 * (nothing reserved for it), else 402.
 */
export interface UnderLimit<Ctx> extends Payable<Ctx> {
  admit: "under-limit";
  via: { billing?: CallBilling | undefined };
}

/**
 * Work billed by its parts as they end (an agent turn's model calls) under a
 * reservation held while the handler runs, so a burst cannot all start on
 * the same unspent budget; released when the handler ends. `estimate` runs
 * on every call (it may read, as the turn's conversation model): return 0
 * when the payer is never stopped (a test key).
 */
export interface HeldReservation<Ctx> extends Payable<Ctx> {
  admit: "hold";
  via: { billing?: CallBilling | undefined };
  estimate(ctx: Ctx): number | Promise<number>;
}

export type RouteBilling<Ctx> = ReservedCall<Ctx> | UnderLimit<Ctx> | HeldReservation<Ctx>;

/**
 * A billed request in flight: what `ctx.bill` reports to, and what the
 * server closes after the handler. A class: on the hot path a request
 * allocates one object and no closures.
 */
export class RouteBill {
  private done = false;
  private readonly meter: UsageMeter | undefined;
  private readonly category: UsageCategory | undefined;
  private readonly context: UsageContext | undefined;
  private readonly billing: CallBilling | undefined;
  private readonly reservation: Reservation | undefined;

  constructor(meter: UsageMeter | undefined, category: UsageCategory | undefined, context: UsageContext | undefined, billing?: CallBilling, reservation?: Reservation) {
    this.meter = meter;
    this.category = category;
    this.context = context;
    this.billing = billing;
    this.reservation = reservation;
  }

  /** Bills the call's figures: settles the reservation, or records the call off the request path; answer after the promise. */
  bill(called: UsageFigures): void | Promise<void> {
    if (!this.meter || !this.category) throw new Error("ctx.bill on a route that declares no billed call (billing.admit \"reserve\")");
    // An answer from the response cache made no provider call: its record says so and is priced at the cache price (gateway/cache/).
    const figures: UsageFigures = servedFromCache() ? { ...called, cache: "hit" } : called;
    // The promise: the record's journal write, grouped with this turn's others (tenancy/usage-journal.ts); the answer waits for it.
    if (!this.reservation || !this.context || !this.billing) return this.meter.recordGrouped(this.context, this.category, figures);
    if (this.done) return undefined;
    this.done = true;
    return settle(this.billing, this.meter, this.context, this.category, this.reservation, figures);
  }

  /** After the handler (or when it failed): releases a reservation `bill` did not settle. Undefined when there is nothing to do. */
  release(): Promise<void> | undefined {
    if (!this.reservation || !this.billing || this.done) return undefined;
    this.done = true;
    // A ledger that cannot be reached: the reservation expires on its own; the answer is not failed for it.
    return this.billing.settle(this.reservation, undefined).catch(() => undefined);
  }
}

async function settle(billing: CallBilling, meter: UsageMeter, context: UsageContext, category: UsageCategory, reservation: Reservation, figures: UsageFigures): Promise<void> {
  const record = meter.build(context, category, figures);
  try {
    await billing.settle(reservation, record);
  } catch {
    // The ledger is unreachable: the answered call is not failed for it. The
    // recorder below retries the record; the reservation expires on its own.
  }
  // Also to the usual sinks (the recorder, token limits); a ledger that already has it ignores the repeat.
  await meter.emitGrouped(record);
}

/** A route whose parts are billed elsewhere: nothing for `ctx.bill`, nothing to release. */
const nothingHeld = new RouteBill(undefined, undefined, undefined);

/**
 * Admits a request under its route's billing declaration, before the
 * handler. Synchronous unless a reservation (or, for "hold", the estimate's
 * read) is needed; throws (or rejects with) 402 budget_exceeded when the
 * project is at its hard limit.
 */
export function admitRoute<Ctx extends BillableContext>(declared: RouteBilling<Ctx>, ctx: Ctx): RouteBill | Promise<RouteBill> {
  const context = declared.payer ? declared.payer(ctx) : usageContextOf(ctx);
  const { billing } = declared.via;
  switch (declared.admit) {
    case "reserve": {
      const { usage } = declared.via;
      const category = typeof declared.category === "function" ? declared.category(ctx) : declared.category;
      if (!billing || !context) return new RouteBill(usage, category, context);
      const pending = billing.admit(context, () => declared.estimate(ctx));
      if (!pending) return new RouteBill(usage, category, context);
      return pending.then((reservation) => new RouteBill(usage, category, context, billing, reservation));
    }
    case "under-limit": {
      const pending = context ? billing?.admit(context, () => 0) : undefined;
      if (!pending || !billing) return nothingHeld;
      return pending.then(async (reservation) => {
        // Only the admission counted: the parts reserve and settle on their own.
        if (reservation) await billing.settle(reservation, undefined);
        return nothingHeld;
      });
    }
    case "hold": {
      if (!billing || !context) return nothingHeld;
      const estimate = declared.estimate(ctx);
      const hold = (nanos: number): RouteBill | Promise<RouteBill> => {
        const pending = billing.admit(context, () => nanos);
        if (!pending) return nothingHeld;
        return pending.then((reservation) => (reservation ? new RouteBill(undefined, undefined, context, billing, reservation) : nothingHeld));
      };
      return typeof estimate === "number" ? hold(estimate) : estimate.then(hold);
    }
  }
}
