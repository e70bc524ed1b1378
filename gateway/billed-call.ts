// What a billed route needs of billing (CallBilling, tenancy/billing.ts
// implements it) and how it prices its reservation: the estimates AI routes
// declare in their `billing` (route-billing.ts runs the declaration:
// admit before the handler, settle or release after it). A reserved call is
// billed by settling its reservation at the real cost before the response is
// sent, so the next call (on any replica) sees it spent.
import { maxOutputTokens, priceOf, type Catalogue, type Category, type ModelEntry } from "../providers/catalogue.ts";
import type { Payer, UsageRecord } from "../providers/usage.ts";
import type { Reservation } from "../tenancy/ledger.ts";

/** What a route needs of billing (tenancy/billing.ts implements it). */
export interface CallBilling {
  admit(payer: Payer, estimateNanos: () => number): undefined | Promise<Reservation | undefined>;
  settle(reservation: Reservation, record: UsageRecord | undefined): Promise<void>;
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
