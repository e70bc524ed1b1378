// The ledger embedded: lmdb under the data directory, for the single-process
// mode. Each append's writes are queued in one event turn, so lmdb commits
// them in one transaction (the idempotency marks, the records, the counters
// and the alert claims change together, and survive a crash once
// committed); reservations of calls in flight live in memory, as the calls
// themselves do. The rules are those of the Redis scripts.
// The writes are lmdb's asynchronous puts, performed on its write thread,
// never in a transaction callback on the event loop: an append costs the
// main thread only its reads and the encoding (bench:chat measured a
// 200-record callback transaction at ~15 ms of blocked event loop).
// Concurrent calls' appends share one commit (one fsync); each resolves once
// its commit is durable, except a settle: it resolves once its writes read
// back (the reservation it replaces is dropped then, when spent already
// counts the record), its durability left to the usage recorder's append of
// the same record.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { open, type Database, type RootDatabase } from "lmdb";
import { SCHEMA_VERSION, upgrade, type RecordKind } from "../core/schema-version.ts";
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
  type ReservedPart,
  type ReserveOutcome,
  type StoredBudget,
  type UsageRow,
  type UsageToDate,
} from "./ledger.ts";

/**
 * One lmdb database written behind the main thread: `put` queues the write
 * (lmdb performs it on its write thread, batched with every other write of
 * the event turn) and keeps the value readable here until it is committed,
 * because lmdb's reads see committed data only. One process writes the
 * embedded ledger, so what it wrote last is the truth.
 */
class WriteBehind<V> {
  readonly db: Database<V, string>;
  private readonly pending = new Map<string, { value: V; writes: number }>();

  constructor(db: Database<V, string>) {
    this.db = db;
  }

  get(key: string): V | undefined {
    const pending = this.pending.get(key);
    return pending ? pending.value : this.db.get(key);
  }

  /** Queues the write; `commits` gets the promise of its commit and what to forget then. */
  put(key: string, value: V, commits: Commits): void {
    commits.last = this.db.put(key, value);
    const pending = this.pending.get(key);
    if (pending) {
      pending.value = value;
      pending.writes += 1;
    } else this.pending.set(key, { value, writes: 1 });
    commits.forget.push(() => {
      const written = this.pending.get(key);
      if (written && --written.writes === 0) this.pending.delete(key);
    });
  }
}

/** The writes of one append: lmdb commits in order, so the last one's promise is the whole append's. */
interface Commits {
  last: Promise<boolean> | undefined;
  forget: Array<() => void>;
}

/** What one append adds to one aggregate row or one key's/environment's usage to date. */
interface Counts {
  c: number;
  i: number;
  o: number;
  u: number;
  n: number;
  last: string;
}

function countsOf(map: Map<string, Counts>, key: string): Counts {
  let counts = map.get(key);
  if (!counts) {
    counts = { c: 0, i: 0, o: 0, u: 0, n: 0, last: "" };
    map.set(key, counts);
  }
  return counts;
}

interface Held {
  amount: number;
  expiresAt: number;
}

/**
 * A ledger entry or budget as stored: `{s: version, v: value}`; a release
 * before schema versions stored the bare value (version 0, no `s`).
 */
type Versioned<T> = { s: number; v: T } | T;

function opened<T>(kind: RecordKind, stored: Versioned<T>): T {
  const entry = stored as { s?: unknown; v?: unknown };
  if (typeof entry.s === "number" && "v" in entry) return (entry.s === SCHEMA_VERSION ? entry.v : upgrade(kind, entry.s, entry.v)) as T;
  return upgrade(kind, 0, stored) as T;
}

/** Sums the holds still in force, dropping the expired ones. */
function heldNow(held: Map<string, Held>, nowMs: number): number {
  let reserved = 0;
  for (const [id, h] of held) {
    if (h.expiresAt <= nowMs) held.delete(id);
    else reserved += h.amount;
  }
  return reserved;
}

export class EmbeddedLedgerStore implements LedgerStore {
  readonly kind = "embedded" as const;
  private readonly root: RootDatabase;
  /** `<project>\n<usage_key>` → true: what was billed. */
  private readonly ids: WriteBehind<true>;
  /** [project, period, seq] → the record: the append-only ledger. */
  private readonly entries: Database<Versioned<UsageRecord>, [string, string, number]>;
  /** Integer counters: aggregates, period spend, usage to date. */
  private readonly counters: WriteBehind<number>;
  private readonly budgets: Database<Versioned<StoredBudget>, string>;
  private readonly texts: WriteBehind<string>;
  private readonly pending: Database<BudgetAlert, string>;
  /** Reservations in flight per `<project>:<period>`. */
  private readonly held = new Map<string, Map<string, Held>>();

  constructor(dataDir: string) {
    const dir = join(dataDir, "billing");
    mkdirSync(dir, { recursive: true });
    this.root = open({ path: join(dir, "ledger.lmdb"), compression: false });
    this.ids = new WriteBehind(this.root.openDB<true, string>({ name: "ids", encoding: "msgpack" }));
    this.entries = this.root.openDB<Versioned<UsageRecord>, [string, string, number]>({ name: "entries", encoding: "msgpack" });
    this.counters = new WriteBehind(this.root.openDB<number, string>({ name: "counters", encoding: "msgpack" }));
    this.budgets = this.root.openDB<Versioned<StoredBudget>, string>({ name: "budgets", encoding: "msgpack" });
    this.texts = new WriteBehind(this.root.openDB<string, string>({ name: "texts", encoding: "string" }));
    this.pending = this.root.openDB<BudgetAlert, string>({ name: "pending", encoding: "msgpack" });
  }

  async append(records: UsageRecord[], settle?: Reservation): Promise<BudgetAlert[]> {
    // Everything up to the await runs in one event turn, so lmdb commits all
    // of it in one transaction: the idempotency marks, the records, the
    // counters and the alert claims land together or not at all. Counters
    // are summed over the batch first, so each changes once per append.
    const commits: Commits = { last: undefined, forget: [] };
    const rows = new Map<string, Counts>();
    const users = new Map<string, Counts>();
    const spend = new Map<string, { record: UsageRecord; period: string; nanos: number }>();
    let seq = this.counters.get("seq") ?? 0;
    for (const r of records) {
      const id = `${r.project_id}\n${r.usage_key}`;
      if (this.ids.get(id)) continue;
      this.ids.put(id, true, commits);
      const period = periodOf(r.created_at);
      seq += 1;
      void this.entries.put([r.project_id, period, seq], { s: SCHEMA_VERSION, v: r });
      const row = countsOf(rows, `agg\t${r.project_id}\t${period}\t${rowKey(r)}`);
      row.c += r.cost_nanos;
      row.i += r.input_tokens;
      row.o += r.output_tokens;
      row.u += unitsMicro(r);
      row.n += 1;
      for (const user of [r.api_key_id, r.environment_id]) {
        const use = countsOf(users, user);
        use.c += r.cost_nanos;
        use.n += 1;
        if (use.last < r.created_at) use.last = r.created_at;
      }
      if (r.live) {
        const spentKey = `spent\t${r.project_id}\t${period}`;
        const spent = spend.get(spentKey);
        if (spent) spent.nanos += r.cost_nanos;
        else spend.set(spentKey, { record: r, period, nanos: r.cost_nanos });
      }
    }
    const alerts: BudgetAlert[] = [];
    if (commits.last) {
      const add = (key: string, by: number) => {
        if (by !== 0) this.counters.put(key, (this.counters.get(key) ?? 0) + by, commits);
      };
      this.counters.put("seq", seq, commits);
      for (const [field, row] of rows) for (const counter of ["c", "i", "o", "u", "n"] as const) add(`${field}\t${counter}`, row[counter]);
      for (const [user, use] of users) {
        add(`use\t${user}\tc`, use.c);
        add(`use\t${user}\tn`, use.n);
        const last = this.texts.get(`use\t${user}`);
        if (last === undefined || last < use.last) this.texts.put(`use\t${user}`, use.last, commits);
      }
      for (const [spentKey, { record, period, nanos }] of spend) {
        add(spentKey, nanos);
        alerts.push(...this.claimAlerts(record, period, this.counters.get(spentKey) ?? 0, commits));
      }
      const committed = commits.last.finally(() => {
        for (const forget of commits.forget) forget();
      });
      // A settle (a hard-limited call, answered only after it) is read back
      // by every later call from here on, so the call need not wait for the
      // disk: its record also goes to the usage recorder, whose append is
      // durable and finds it already there. Everything else (a flush, a
      // video scene) resolves once committed.
      if (settle) committed.catch(() => undefined);
      else await committed;
    }
    if (settle) this.dropHeld(settle);
    return alerts;
  }

  /** Claims each threshold the project's spend has reached that no earlier append claimed. */
  private claimAlerts(r: UsageRecord, period: string, spent: number, commits: Commits): BudgetAlert[] {
    const budget = this.budget(r.project_id);
    if (!budget) return [];
    const alerts: BudgetAlert[] = [];
    for (const threshold of budget.alert_thresholds) {
      const claim = `alert\t${r.project_id}\t${period}\t${threshold}`;
      if (spent < thresholdMark(budget, threshold) || this.texts.get(claim) !== undefined) continue;
      this.texts.put(claim, String(spent), commits);
      const alert: BudgetAlert = { organization_id: r.organization_id, project_id: r.project_id, period, threshold, limit_nanos: limitNanos(budget), spent_nanos: spent };
      void this.pending.put(`${r.project_id}:${period}:${threshold}`, alert);
      alerts.push(alert);
    }
    return alerts;
  }

  private heldOf(reservation: Omit<Reservation, "id">): Map<string, Held> {
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
    const budget = this.budget(reservation.project_id);
    if (!budget?.hard_limit) return { admitted: true };
    const held = this.heldOf(reservation);
    const reserved = heldNow(held, nowMs);
    const spent = this.counters.get(`spent\t${reservation.project_id}\t${reservation.period}`) ?? 0;
    const limit = limitNanos(budget);
    if (spent + reserved >= limit) return { admitted: false, spent_nanos: spent, reserved_nanos: reserved, limit_nanos: limit };
    held.set(reservation.id, { amount: amountNanos, expiresAt: expiresAtMs });
    return { admitted: true };
  }

  async reserveParts(place: Omit<Reservation, "id">, parts: ReservedPart[], expiresAtMs: number, nowMs: number, restore: boolean): Promise<ReserveOutcome> {
    const budget = this.budget(place.project_id);
    if (!budget?.hard_limit) return { admitted: true };
    const held = this.heldOf(place);
    const reserved = heldNow(held, nowMs);
    const spent = this.counters.get(`spent\t${place.project_id}\t${place.period}`) ?? 0;
    const limit = limitNanos(budget);
    const total = parts.reduce((sum, part) => sum + part.amount_nanos, 0);
    if (!restore && (spent + reserved >= limit || spent + reserved + total > limit)) return { admitted: false, spent_nanos: spent, reserved_nanos: reserved, limit_nanos: limit };
    for (const part of parts) {
      const kept = held.get(part.id);
      if (kept) kept.expiresAt = expiresAtMs;
      else held.set(part.id, { amount: part.amount_nanos, expiresAt: expiresAtMs });
    }
    return { admitted: true };
  }

  async release(reservation: Reservation): Promise<void> {
    this.dropHeld(reservation);
  }

  async putBudget(projectId: string, budget: StoredBudget): Promise<void> {
    await this.budgets.put(projectId, { s: SCHEMA_VERSION, v: budget });
  }

  private budget(projectId: string): StoredBudget | undefined {
    const stored = this.budgets.get(projectId);
    return stored === undefined ? undefined : opened<StoredBudget>("budget", stored);
  }

  async getBudget(projectId: string): Promise<StoredBudget | undefined> {
    return this.budget(projectId);
  }

  async spent(projectId: string, period: string): Promise<number> {
    return this.counters.get(`spent\t${projectId}\t${period}`) ?? 0;
  }

  async records(projectId: string, period: string): Promise<UsageRecord[]> {
    // Keys are [project, period, seq]: everything between [project, period] and the next period string.
    return [...this.entries.getRange({ start: [projectId, period, 0], end: [projectId, `${period}\u0000`, 0] }).map(({ value }) => opened<UsageRecord>("usage-record", value))];
  }

  async usageRows(projectId: string, fromPeriod: string, toPeriod: string): Promise<UsageRow[]> {
    const rows = new Map<string, UsageRow>();
    // Periods sort as strings: one range scan over the months that have usage.
    const prefix = `agg\t${projectId}\t`;
    for (const { key, value } of this.counters.db.getRange({ start: `${prefix}${fromPeriod}\t`, end: `${prefix}${toPeriod}\t\uffff` })) {
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
