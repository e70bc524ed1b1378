// The ledger embedded: lmdb under the data directory, for the single-process
// mode. Each append is one lmdb write transaction (so the idempotency
// check, the counters and the alert claims change together, and survive a
// crash once committed); reservations of calls in flight live in memory, as
// the calls themselves do. The rules are those of the Redis scripts.
// Appends use lmdb's batched write transactions: concurrent calls' appends
// share one commit (one fsync) instead of one each, and each resolves once
// that commit is durable. A settled reservation is dropped only then, so
// spent + reserved never reads low in between.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { open, type Database, type RootDatabase } from "lmdb";
import type { UsageRecord } from "../providers/usage.ts";
import {
  addCounter,
  limitNanos,
  parseRowKey,
  periodOf,
  rowKey,
  thresholdMark,
  unitsMicro,
  type BudgetAlert,
  type LedgerStore,
  type Reservation,
  type ReserveOutcome,
  type StoredBudget,
  type UsageRow,
  type UsageToDate,
} from "./ledger.ts";

interface Held {
  amount: number;
  expiresAt: number;
}

export class EmbeddedLedgerStore implements LedgerStore {
  readonly kind = "embedded" as const;
  private readonly root: RootDatabase;
  /** `<project>\n<usage_key>` → true: what was billed. */
  private readonly ids: Database<true, string>;
  /** [project, period, seq] → the record: the append-only ledger. */
  private readonly entries: Database<UsageRecord, [string, string, number]>;
  /** Integer counters: aggregates, period spend, usage to date. */
  private readonly counters: Database<number, string>;
  private readonly budgets: Database<StoredBudget, string>;
  private readonly texts: Database<string, string>;
  private readonly pending: Database<BudgetAlert, string>;
  /** Reservations in flight per `<project>:<period>`. */
  private readonly held = new Map<string, Map<string, Held>>();

  constructor(dataDir: string) {
    const dir = join(dataDir, "billing");
    mkdirSync(dir, { recursive: true });
    this.root = open({ path: join(dir, "ledger.lmdb"), compression: false });
    this.ids = this.root.openDB<true, string>({ name: "ids", encoding: "msgpack" });
    this.entries = this.root.openDB<UsageRecord, [string, string, number]>({ name: "entries", encoding: "msgpack" });
    this.counters = this.root.openDB<number, string>({ name: "counters", encoding: "msgpack" });
    this.budgets = this.root.openDB<StoredBudget, string>({ name: "budgets", encoding: "msgpack" });
    this.texts = this.root.openDB<string, string>({ name: "texts", encoding: "string" });
    this.pending = this.root.openDB<BudgetAlert, string>({ name: "pending", encoding: "msgpack" });
  }

  private add(key: string, by: number): number {
    const value = (this.counters.get(key) ?? 0) + by;
    this.counters.put(key, value);
    return value;
  }

  private touch(id: string, record: UsageRecord): void {
    this.add(`use\t${id}\tc`, record.cost_nanos);
    this.add(`use\t${id}\tn`, 1);
    const last = this.texts.get(`use\t${id}`);
    if (last === undefined || last < record.created_at) this.texts.put(`use\t${id}`, record.created_at);
  }

  async append(records: UsageRecord[], settle?: Reservation): Promise<BudgetAlert[]> {
    const alerts: BudgetAlert[] = [];
    await this.root.transaction(() => {
      for (const r of records) {
        const id = `${r.project_id}\n${r.usage_key}`;
        if (this.ids.get(id)) continue;
        this.ids.put(id, true);
        const period = periodOf(r.created_at);
        this.entries.put([r.project_id, period, this.add("seq", 1)], r);
        const field = `agg\t${r.project_id}\t${period}\t${rowKey(r)}`;
        this.add(`${field}\tc`, r.cost_nanos);
        this.add(`${field}\ti`, r.input_tokens);
        this.add(`${field}\to`, r.output_tokens);
        this.add(`${field}\tu`, unitsMicro(r));
        this.add(`${field}\tn`, 1);
        this.touch(r.api_key_id, r);
        this.touch(r.environment_id, r);
        if (r.live) alerts.push(...this.countSpend(r, period));
      }
    });
    if (settle) this.dropHeld(settle);
    return alerts;
  }

  private countSpend(r: UsageRecord, period: string): BudgetAlert[] {
    const spent = this.add(`spent\t${r.project_id}\t${period}`, r.cost_nanos);
    const budget = this.budgets.get(r.project_id);
    if (!budget) return [];
    const alerts: BudgetAlert[] = [];
    for (const threshold of budget.alert_thresholds) {
      const claim = `alert\t${r.project_id}\t${period}\t${threshold}`;
      if (spent < thresholdMark(budget, threshold) || this.texts.get(claim) !== undefined) continue;
      this.texts.put(claim, String(spent));
      const alert: BudgetAlert = { organization_id: r.organization_id, project_id: r.project_id, period, threshold, limit_nanos: limitNanos(budget), spent_nanos: spent };
      this.pending.put(`${r.project_id}:${period}:${threshold}`, alert);
      alerts.push(alert);
    }
    return alerts;
  }

  private heldOf(reservation: Reservation): Map<string, Held> {
    const key = `${reservation.project_id}:${reservation.period}`;
    let held = this.held.get(key);
    if (!held) {
      held = new Map();
      this.held.set(key, held);
    }
    return held;
  }

  private dropHeld(reservation: Reservation): void {
    const held = this.heldOf(reservation);
    held.delete(reservation.id);
    if (held.size === 0) this.held.delete(`${reservation.project_id}:${reservation.period}`);
  }

  async reserve(reservation: Reservation, amountNanos: number, expiresAtMs: number, nowMs: number): Promise<ReserveOutcome> {
    const budget = this.budgets.get(reservation.project_id);
    if (!budget?.hard_limit) return { admitted: true };
    const held = this.heldOf(reservation);
    let reserved = 0;
    for (const [id, h] of held) {
      if (h.expiresAt <= nowMs) held.delete(id);
      else reserved += h.amount;
    }
    const spent = this.counters.get(`spent\t${reservation.project_id}\t${reservation.period}`) ?? 0;
    const limit = limitNanos(budget);
    if (spent + reserved >= limit) return { admitted: false, spent_nanos: spent, reserved_nanos: reserved, limit_nanos: limit };
    held.set(reservation.id, { amount: amountNanos, expiresAt: expiresAtMs });
    return { admitted: true };
  }

  async release(reservation: Reservation): Promise<void> {
    this.dropHeld(reservation);
  }

  async putBudget(projectId: string, budget: StoredBudget): Promise<void> {
    await this.budgets.put(projectId, budget);
  }

  async getBudget(projectId: string): Promise<StoredBudget | undefined> {
    return this.budgets.get(projectId);
  }

  async spent(projectId: string, period: string): Promise<number> {
    return this.counters.get(`spent\t${projectId}\t${period}`) ?? 0;
  }

  async records(projectId: string, period: string): Promise<UsageRecord[]> {
    // Keys are [project, period, seq]: everything between [project, period] and the next period string.
    return [...this.entries.getRange({ start: [projectId, period, 0], end: [projectId, `${period}\u0000`, 0] }).map(({ value }) => value)];
  }

  async usageRows(projectId: string, fromPeriod: string, toPeriod: string): Promise<UsageRow[]> {
    const rows = new Map<string, UsageRow>();
    // Periods sort as strings: one range scan over the months that have usage.
    const prefix = `agg\t${projectId}\t`;
    for (const { key, value } of this.counters.getRange({ start: `${prefix}${fromPeriod}\t`, end: `${prefix}${toPeriod}\t\uffff` })) {
      const field = key.slice(prefix.length + "YYYY-MM\t".length);
      const cut = field.lastIndexOf("\t");
      const rowId = field.slice(0, cut);
      let row = rows.get(rowId);
      if (!row) {
        row = { ...parseRowKey(rowId), cost_nanos: 0, input_tokens: 0, output_tokens: 0, units_micro: 0, calls: 0 };
        rows.set(rowId, row);
      }
      addCounter(row, field.slice(cut + 1), value);
    }
    return [...rows.values()];
  }

  async usageToDate(ids: string[]): Promise<Map<string, UsageToDate>> {
    return new Map(
      ids.map((id) => [
        id,
        { cost_nanos: this.counters.get(`use\t${id}\tc`) ?? 0, calls: this.counters.get(`use\t${id}\tn`) ?? 0, last_used_at: this.texts.get(`use\t${id}`) ?? null },
      ]),
    );
  }

  async pendingAlerts(): Promise<BudgetAlert[]> {
    return [...this.pending.getRange({})].map(({ value }) => value);
  }

  async ackAlert(alert: BudgetAlert): Promise<void> {
    await this.pending.remove(`${alert.project_id}:${alert.period}:${alert.threshold}`);
  }

  async close(): Promise<void> {
    await this.root.close();
  }
}
