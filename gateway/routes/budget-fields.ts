// The fields of a monthly budget, one validation for a project's (PUT
// /v1/projects/{id}/budget) and a key's own (its record's
// monthly_budget_usd, alert_thresholds, hard_limit).
import { z } from "zod";

/** ≤ 1,000,000 USD: nano-dollar counters stay exact in Lua's doubles (2^53). */
export const monthlyUsd = z.number().min(0.000001).max(1_000_000);
/** Fractions of the limit, each crossed at most once a month. */
export const alertThresholds = z.array(z.number().gt(0).max(10)).max(20);
