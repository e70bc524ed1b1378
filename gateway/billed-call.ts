// How an AI route runs a billed call against its project's budget
// (docs/api/usage-budgets-rate-limits.md): admit (a hard-limited live project reserves the call's
// estimated cost, or the call is 402 before any provider call), run, then
// bill. A reserved call is billed by settling its reservation at the real
// cost before the response is sent, so the next call (on any replica) sees
// it spent; every other call is recorded off the request path as before.
import { maxOutputTokens, priceOf, type Catalogue, type Category, type ModelEntry } from "../providers/catalogue.ts";
import type { Payer, UsageCategory, UsageContext, UsageFigures, UsageMeter, UsageRecord } from "../providers/usage.ts";
import type { Reservation } from "../tenancy/ledger.ts";

/** What a route needs of billing (tenancy/billing.ts implements it). */
export interface CallBilling {
  admit(payer: Payer, estimateNanos: () => number): undefined | Promise<Reservation | undefined>;
  settle(reservation: Reservation, record: UsageRecord | undefined): Promise<void>;
}

/**
 * Admits work whose cost is not known up front (an agent turn's model calls,
 * a video job's scenes), each part billed as it ends: a hard-limited
 * project's work starts only while spent + reserved is under its limit
 * (nothing reserved for itself), else 402 before any provider call.
 */
export async function admitUnderLimit(billing: CallBilling | undefined, payer: Payer): Promise<void> {
  const pending = billing?.admit(payer, () => 0);
  const reservation = pending ? await pending : undefined;
  if (reservation && billing) await billing.settle(reservation, undefined);
}

/**
 * Admits work billed by its parts as they end (an agent turn's model calls)
 * under a reservation held until `release`: while it runs, others see the
 * budget `estimate` lower. 402 before any provider call when the project is
 * at its hard limit.
 */
export async function holdReservation(billing: CallBilling | undefined, payer: Payer, estimate: () => number): Promise<{ release(): Promise<void> }> {
  const pending = billing?.admit(payer, estimate);
  const reservation = pending ? await pending : undefined;
  if (!reservation || !billing) return { release: async () => undefined };
  return { release: () => billing.settle(reservation, undefined).catch(() => undefined) };
}

/**
 * A call's reservation: the most it may cost before it ran — its input at
 * the model's price plus `max_tokens` of output. Without a model (auto
 * routing) the dearest model of the category is assumed, so a burst can
 * never overshoot by more than one call.
 */
export function estimateNanos(catalogue: Catalogue, category: Category, model: string | null | undefined, usage: { input_tokens: number; output_tokens?: number; units?: number }): number {
  return dearest(catalogue, category, model, (m) => priceOf(m, usage));
}

/**
 * The reservation of a call that generates text (chat, vision, translation):
 * its input plus `max_tokens` of output, or without `max_tokens` the most
 * output the model can produce in one call (its catalogue max_output_tokens).
 * Reserving less would let a burst of such calls through at once, each
 * admitted on a reservation its answer can overrun many times over
 * (docs/guides/access-control.md).
 */
export function generationEstimateNanos(catalogue: Catalogue, category: Category, model: string | null | undefined, inputTokens: number, maxTokens: number | null | undefined): number {
  return dearest(catalogue, category, model, (m) => priceOf(m, { input_tokens: inputTokens, output_tokens: maxTokens ?? maxOutputTokens(m) }));
}

/** The named model's cost, or without one (auto routing) the dearest of the category's. */
function dearest(catalogue: Catalogue, category: Category, model: string | null | undefined, cost: (m: ModelEntry) => number): number {
  const entry = model ? catalogue.get(model) : undefined;
  const candidates: ModelEntry[] = entry ? [entry] : catalogue.ofCategory(category);
  let most = 0;
  for (const m of candidates) most = Math.max(most, cost(m));
  return Math.ceil(most * 1e9);
}

export interface BilledCall {
  /** Bills the call's figures: settles the reservation (awaited) or records off the path. */
  bill(category: UsageCategory, figures: UsageFigures): void | Promise<void>;
  /** Releases the reservation of a call that failed (nothing billed). */
  abandon(): Promise<void>;
}

const unreserved = (meter: UsageMeter, context: UsageContext | undefined): BilledCall => ({
  bill: (category, figures) => meter.record(context, category, figures),
  abandon: async () => undefined,
});

/**
 * Admits the call; synchronous (no reservation) for session calls, test keys
 * and projects without a hard limit. `estimate` runs only when a reservation
 * is needed, so counting tokens stays off the common path.
 */
export function admitCall(
  billing: CallBilling | undefined,
  meter: UsageMeter,
  context: UsageContext | undefined,
  estimate: () => number,
): BilledCall | Promise<BilledCall> {
  if (!billing || !context) return unreserved(meter, context);
  const pending = billing.admit(context, estimate);
  if (!pending) return unreserved(meter, context);
  return pending.then((reservation) => (reservation ? reserved(billing, meter, context, reservation) : unreserved(meter, context)));
}

function reserved(billing: CallBilling, meter: UsageMeter, context: UsageContext, reservation: Reservation): BilledCall {
  let done = false;
  return {
    bill: async (category, figures) => {
      done = true;
      const record = meter.build(context, category, figures);
      try {
        await billing.settle(reservation, record);
      } catch {
        // The ledger is unreachable: the answered call is not failed for it. The
        // recorder below retries the record; the reservation expires on its own.
      }
      // Also to the usual sinks (the recorder, token limits); a ledger that already has it ignores the repeat.
      meter.emit(record);
    },
    abandon: async () => {
      if (done) return;
      done = true;
      await billing.settle(reservation, undefined);
    },
  };
}

/**
 * Runs one billed call of a route: admitted against the budget first (402
 * before any provider call), billed with `figures` of its result, its
 * reservation released if it fails.
 */
export async function runBilled<T>(
  deps: { usage: UsageMeter; billing?: CallBilling | undefined },
  context: UsageContext | undefined,
  category: UsageCategory,
  estimate: () => number,
  run: () => Promise<T>,
  figures: (result: T) => UsageFigures,
): Promise<T> {
  const call = await admitCall(deps.billing, deps.usage, context, estimate);
  let result: T;
  try {
    result = await run();
  } catch (error) {
    await call.abandon();
    throw error;
  }
  await call.bill(category, figures(result));
  return result;
}
