// A video job held to its project's budget (docs/api/usage-budgets-rate-limits.md)
// and to its key's own (docs/guides/access-control.md):
// under a hard limit the job is admitted only when its whole estimated cost
// fits (each scene: the clip seconds its model makes × the model's price;
// the narration: its characters × the speech model's price), held as one
// part per scene plus one for the narration. Each part is released when its
// usage record is billed; a job that ends failed or cancelled releases the
// parts still open. The parts live in the job's state, so the hold follows
// the job wherever its actor runs (embedded or on Dapr) and is restored after
// a restart of the embedded ledger, which keeps holds in memory.
import { z } from "zod";
import { priceOf, type ModelEntry, type Need } from "../../providers/catalogue.ts";
import { speaks } from "../../providers/speech.ts";
import type { RoutingStrategy } from "../../providers/types.ts";
import type { Payer } from "../../providers/usage.ts";
import { nearestDuration, videoNeed } from "../../providers/video-routing.ts";
import type { Reservation, ReservedPart } from "../../tenancy/ledger.ts";

export const heldPartSchema = z.object({ id: z.string(), amount_nanos: z.number().int().min(0), open: z.boolean() });
/**
 * The parts a job holds (JobData.budget): part i is segment i's, then the
 * narration's when there is one. `api_key_id`: the parts are held against that key's own monthly budget too
 * (the job's key has a hard one); `project` false: against the key's only.
 * Absent in older states: the project's only.
 */
export const jobBudgetSchema = z.object({
  project_id: z.string(),
  period: z.string(),
  parts: z.array(heldPartSchema),
  api_key_id: z.string().optional(),
  project: z.boolean().optional(),
});
export type JobBudgetState = z.infer<typeof jobBudgetSchema>;

/** What the JobActor needs of billing (tenancy/billing.ts). */
export interface JobBudget {
  /**
   * Holds the parts under a hard limit (undefined: nothing to hold), else 402
   * budget_exceeded; `keyBudget`: under the key's own hard limit too (the
   * caller settles each part with partsFor).
   */
  reserveParts(payer: Payer, idPrefix: string, amountsNanos: number[], opts?: { keyBudget?: boolean }): Promise<HeldJobParts | undefined>;
  restoreParts(held: HeldJobPlaces, parts: ReservedPart[]): Promise<void>;
  releaseParts(held: HeldJobPlaces, partIds: string[]): Promise<void>;
}

/** Where a job's parts are held (JobBudgetState without the parts). */
export interface HeldJobPlaces {
  project_id: string;
  period: string;
  api_key_id?: string | undefined;
  project?: boolean | undefined;
}

export interface HeldJobParts extends HeldJobPlaces {
  parts: ReservedPart[];
}

/** The router's planning (providers/router.ts). */
export interface Planner {
  plan(model: string | null | undefined, strategy: RoutingStrategy, need: Need): ModelEntry[];
}

export interface JobShape {
  model: string | null;
  routing_strategy: RoutingStrategy;
  duration_seconds: number;
  withImage: boolean;
  segments: number;
  narration_text: string | null;
}

/**
 * The most each part can cost, in nano-dollars: per segment the dearest of
 * the models the segment may be routed to (the named one, or its fallbacks),
 * at the clip length that model makes; then the narration, at the dearest
 * speech model it may use. Never below what the parts are billed.
 */
export function jobPartsNanos(router: Planner, narrationModel: string | undefined, job: JobShape): number[] {
  const segment = dearest(router.plan(job.model, job.routing_strategy, videoNeed(job.withImage)), (m) => priceOf(m, { units: nearestDuration(m, job.duration_seconds) }));
  const parts = Array.from({ length: job.segments }, () => segment);
  if (job.narration_text !== null) {
    const characters = [...job.narration_text].length;
    let speech: ModelEntry[] = [];
    try {
      speech = router.plan(narrationModel ?? null, "auto", { category: "audio", media: speaks });
    } catch {
      // No speech model: the narration step fails the job, nothing billed for it.
    }
    parts.push(dearest(speech, (m) => priceOf(m, { units: characters })));
  }
  return parts;
}

function dearest(models: ModelEntry[], costUsd: (m: ModelEntry) => number): number {
  let most = 0;
  for (const m of models) most = Math.max(most, Math.round(costUsd(m) * 1e9));
  return most;
}

/** The part a segment's (index) or the narration's (index = segment count) record settles, if still held. */
export function partFor(budget: JobBudgetState | null, index: number): Reservation | undefined {
  const part = budget?.parts[index];
  return budget && part?.open ? { project_id: budget.project_id, period: budget.period, id: part.id } : undefined;
}

/** Every hold a segment's (index) or the narration's record settles, if still held: the project's part, the key's, or both. */
export function partsFor(budget: JobBudgetState | null, index: number): Reservation[] {
  const part = budget?.parts[index];
  if (!budget || !part?.open) return [];
  const held: Reservation[] = [];
  if (budget.project !== false) held.push({ project_id: budget.project_id, period: budget.period, id: part.id });
  if (budget.api_key_id) held.push({ project_id: budget.project_id, api_key_id: budget.api_key_id, period: budget.period, id: part.id });
  return held;
}

/** Marks a part settled once its record is billed. */
export function closePart(budget: JobBudgetState | null, index: number): void {
  const part = budget?.parts[index];
  if (part) part.open = false;
}

export function openParts(budget: JobBudgetState | null): Array<z.infer<typeof heldPartSchema>> {
  return budget ? budget.parts.filter((p) => p.open) : [];
}
