// The usage ledger and the budget counters (docs/api/usage-budgets-rate-limits.md),
// one interface with an embedded (lmdb, one process) and a Redis (Lua
// scripts, any number of replicas) implementation run by one shared suite.
//
// Why one store holds both: the rule "admit while spent + reservations in
// flight < limit" is only exact if appending a billed record (spent grows),
// releasing its reservation and checking a new one are each one atomic step
// on the same counters. On Redis every step is one script; embedded, one
// synchronous lmdb transaction in the only process.
//
// Money is integer nano-dollars everywhere (`cost_nanos`): sums never drift.
// Lua's numbers are doubles, exact to 2^53 nano-dollars (≈ 9 million USD per
// project and month), far beyond any budget here.
import type { UsageRecord } from "../providers/usage.ts";

export const nanosPerUsd = 1_000_000_000;

/** A project's budget as stored: the limit in nano-dollars and each threshold's mark. */
export interface StoredBudget {
  monthly_limit_usd: number;
  alert_thresholds: number[];
  hard_limit: boolean;
  updated_at: string;
}

/** A threshold crossed by an append: emitted once per budget (a project's, or one key's), period and threshold. */
export interface BudgetAlert {
  organization_id: string;
  project_id: string;
  /** Set: the alert is of this key's own budget (key.budget.alert), not the project's. */
  api_key_id?: string | undefined;
  period: string;
  threshold: number;
  limit_nanos: number;
  spent_nanos: number;
}

/** One aggregate row of a project's usage (one day × live × category × model × environment × key). */
export interface UsageRow {
  day: string;
  live: boolean;
  category: string;
  model: string;
  environment_id: string;
  api_key_id: string;
  cost_nanos: number;
  input_tokens: number;
  output_tokens: number;
  /** Per-unit usage (megapixels, seconds, characters) in millionths: fractional units summed as integers. */
  units_micro: number;
  calls: number;
  /** Of input_tokens, those read from a prompt cache and those written to it (0 in rows from before these counters). */
  cached_input_tokens: number;
  cache_write_input_tokens: number;
  /** "hit": calls answered from the response cache; null: provider calls. */
  cache: "hit" | null;
  /** Calls made with the organization's own provider credentials. */
  byok: boolean;
}

/** Usage to date of one key or environment (dashboards). */
export interface UsageToDate {
  cost_nanos: number;
  calls: number;
  last_used_at: string | null;
}

export interface Reservation {
  project_id: string;
  /**
   * Set: held against this key's own monthly budget (within its project), not
   * the project's. A call under both budgets holds one reservation of each.
   */
  api_key_id?: string | undefined;
  period: string;
  id: string;
}

/** One part of work reserved whole (a video job's scene or narration), settled or released on its own. */
export interface ReservedPart {
  id: string;
  amount_nanos: number;
}

export type ReserveOutcome = { admitted: true } | { admitted: false; spent_nanos: number; reserved_nanos: number; limit_nanos: number };

export interface LedgerStore {
  readonly kind: "embedded" | "redis";
  /**
   * Appends the records not already in the ledger (idempotent on
   * `usage_key` per project), counts live costs into their project's period,
   * and releases `settle` (the reservation the record replaces) in the same
   * atomic step. Returns the budget thresholds this append crossed first.
   * Resolves once durable (embedded: committed to disk), or with `settle`
   * once every later call reads it: a settled call's record also goes to
   * the usage recorder, whose durable append finds it there.
   */
  append(records: UsageRecord[], settle?: Reservation): Promise<BudgetAlert[]>;
  /** Admits a call while spent + reserved < the project's hard limit, reserving `amountNanos` until settled or `expiresAtMs`. */
  reserve(reservation: Reservation, amountNanos: number, expiresAtMs: number, nowMs: number): Promise<ReserveOutcome>;
  /**
   * Admits work of known parts (a video job: its scenes and narration) only
   * when all of it fits: spent + reserved + the parts' sum ≤ the project's
   * hard limit (and spent + reserved < it). Each part is then held under its
   * own id, as `reserve` holds a call, until released or `expiresAtMs`.
   * `restore`: holds the parts not held yet without checking (work admitted
   * earlier whose holds a restart lost); a part held already is kept.
   */
  reserveParts(place: Omit<Reservation, "id">, parts: ReservedPart[], expiresAtMs: number, nowMs: number, restore: boolean): Promise<ReserveOutcome>;
  /** Releases a reservation without billing (the call failed before any usage). */
  release(reservation: Reservation): Promise<void>;
  /** `apiKeyId`: the budget of that key of the project, not the project's own. */
  putBudget(projectId: string, budget: StoredBudget, apiKeyId?: string): Promise<void>;
  getBudget(projectId: string, apiKeyId?: string): Promise<StoredBudget | undefined>;
  /**
   * Live nano-dollars spent in a period, by the project or (`apiKeyId`) by
   * one of its keys: the key's figure is counted by the same atomic append
   * that adds the key's aggregate rows, from the same records, so it equals
   * their sum (what the usage report shows for the key) to the nano-dollar.
   */
  spent(projectId: string, period: string, apiKeyId?: string): Promise<number>;
  /** Aggregate rows of the months from `fromPeriod` to `toPeriod` (`YYYY-MM`, inclusive) that have usage; the caller filters days. */
  usageRows(projectId: string, fromPeriod: string, toPeriod: string): Promise<UsageRow[]>;
  /** The records of a project's month (`YYYY-MM`) in append order: what was billed, one per usage_key (audits and tests). */
  records(projectId: string, period: string): Promise<UsageRecord[]>;
  /** Usage to date per key or environment id (`key_…`/`env_…`). */
  usageToDate(ids: string[]): Promise<Map<string, UsageToDate>>;
  /** Alerts claimed but not yet acknowledged as published (a crash between the two). */
  pendingAlerts(): Promise<BudgetAlert[]>;
  ackAlert(alert: BudgetAlert): Promise<void>;
  close(): Promise<void>;
}

/** The billing period of an ISO time: its UTC calendar month, `YYYY-MM`. */
export function periodOf(iso: string): string {
  return iso.slice(0, 7);
}

/** The nano-dollar mark of each threshold: crossing means spent ≥ mark. */
export function thresholdMark(budget: StoredBudget, threshold: number): number {
  return Math.ceil(budget.monthly_limit_usd * threshold * nanosPerUsd);
}

export function limitNanos(budget: StoredBudget): number {
  return Math.round(budget.monthly_limit_usd * nanosPerUsd);
}

/** The aggregate field a record counts under; tab-separated (ids and model names hold no tabs). */
export function rowKey(record: UsageRecord): string {
  const base = [record.created_at.slice(0, 10), record.live ? "1" : "0", record.category, record.model, record.environment_id, record.api_key_id].join("\t");
  // Cache hits and BYOK calls count in rows of their own (two trailing fields, only when set: every other row keeps its key).
  return record.cache || record.byok ? `${base}\t${record.cache ?? ""}\t${record.byok ? "1" : ""}` : base;
}

function parseRowKey(key: string): Pick<UsageRow, "day" | "live" | "category" | "model" | "environment_id" | "api_key_id" | "cache" | "byok"> {
  const [day = "", live = "0", category = "", model = "", environment_id = "", api_key_id = "", cache = "", byok = ""] = key.split("\t");
  return { day, live: live === "1", category, model, environment_id, api_key_id, cache: cache === "hit" ? "hit" : null, byok: byok === "1" };
}

/** A record's units in millionths, the integer the counters add. */
export function unitsMicro(record: UsageRecord): number {
  return Math.round(record.units * 1_000_000);
}

/**
 * Adds one stored aggregate counter to the rows being built. Both stores keep
 * a counter per `<row key>\t<counter>` field (rowKey; c cost, i/o tokens, u
 * units in millionths, n calls, r/w prompt-cache tokens read/written, only
 * once a call had some); the first counter of a row creates it.
 */
export function addToRows(rows: Map<string, UsageRow>, field: string, value: number): void {
  const cut = field.lastIndexOf("\t");
  const key = field.slice(0, cut);
  let row = rows.get(key);
  if (!row) {
    row = { ...parseRowKey(key), cost_nanos: 0, input_tokens: 0, output_tokens: 0, units_micro: 0, calls: 0, cached_input_tokens: 0, cache_write_input_tokens: 0 };
    rows.set(key, row);
  }
  const counter = field.slice(cut + 1);
  if (counter === "c") row.cost_nanos += value;
  else if (counter === "i") row.input_tokens += value;
  else if (counter === "o") row.output_tokens += value;
  else if (counter === "u") row.units_micro += value;
  else if (counter === "n") row.calls += value;
  else if (counter === "r") row.cached_input_tokens += value;
  else if (counter === "w") row.cache_write_input_tokens += value;
}

/** The deterministic event id of an alert, so a re-publish after a crash is the same event. */
export function alertEventId(alert: Pick<BudgetAlert, "project_id" | "api_key_id" | "period" | "threshold">): string {
  if (alert.api_key_id) return `evt_key_budget_${alert.api_key_id}_${alert.period}_${alert.threshold}`;
  return `evt_budget_${alert.project_id}_${alert.period}_${alert.threshold}`;
}

/** Where a pending (claimed, not yet published) alert is kept: one name per budget, period and threshold. */
export function pendingAlertName(alert: Pick<BudgetAlert, "project_id" | "api_key_id" | "period" | "threshold">): string {
  return alert.api_key_id ? `${alert.project_id}:${alert.api_key_id}:${alert.period}:${alert.threshold}` : `${alert.project_id}:${alert.period}:${alert.threshold}`;
}

/** One budget's name in a store: the project's id, or `<project>\t<key>` for a key's own (tabs occur in neither id). */
export function budgetScope(projectId: string, apiKeyId?: string): string {
  return apiKeyId ? `${projectId}\t${apiKeyId}` : projectId;
}
