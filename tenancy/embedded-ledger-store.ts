// The ledger embedded: lmdb under the data directory, for the single-process
// mode, run on its own thread (tenancy/ledger-worker.ts). Each append is one
// synchronous write transaction on that thread: the per-call entries (which
// are also the idempotency marks), the counters and the alert claims change
// together or not at all, and reads inside it see its own writes. Entries
// are compact and kept for the retention window only (tenancy/ledger-entry.ts),
// reports read the counters; reservations of calls in flight live in memory,
// as the calls themselves do. The rules are those of the Redis scripts.
// Synchronous, because the thread is the ledger's alone: lmdb's asynchronous
// puts cost a promise per write and a commit on its own write thread per
// event turn, ~3× the CPU per commit (bench/ledger-append.ts, 2026-11-27:
// 69 vs 51 µs a record in appends of 16, 22 vs 13.5 in appends of 1,024).
// An append resolves once committed (durable); a settle (a hard-limited call
// answered after it) too, and its reservation is dropped then, when spent
// already counts the record.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { open, type Database, type RootDatabase } from "lmdb";
import { SCHEMA_VERSION, upgrade, type RecordKind } from "../core/schema-version.ts";
import type { UsageRecord } from "../providers/usage.ts";
import {
  addToRows,
  budgetScope,
  limitNanos,
  pendingAlertName,
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
import {
  byCreation,
  compactEntry,
  defaultRetentionMs,
  dimensionKey,
  expandEntry,
  parseDimensionKey,
  type CompactEntry,
  type Dimension,
} from "./ledger-entry.ts";
import { GenerationSlots } from "./ledger-slots.ts";
import { countsOf, type Counts } from "./batch-counts.ts";

interface Held {
  amount: number;
  expiresAt: number;
}

export interface EmbeddedLedgerOptions {
  /** How long per-call entries (and so the usage_key idempotency marks) are kept: at least this, at most 1 + 1/G times it. */
  retentionMs?: number;
  /** The clock generations follow (tests move it). */
  now?: () => number;
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

/** A key's or environment's usage to date, as one append adds it up. */
function addUse(users: Map<string, Counts>, user: string, r: UsageRecord): void {
  const use = countsOf(users, user);
  use.c += r.cost_nanos;
  use.n += 1;
  if (use.last < r.created_at) use.last = r.created_at;
}

const noOverwrite = { noOverwrite: true } as const;

/**
 * Writes `value` unless `key` holds one: false when it does. lmdb-js's
 * putSync answers that boolean (its README: "putSync(...): boolean"; with
 * noOverwrite, false on MDB_KEYEXIST), though its typings say void.
 */
function putIfAbsent<V>(db: Database<V, string>, key: string, value: V): boolean {
  return (db.putSync as unknown as PutSyncAnswering<V>).call(db, key, value, noOverwrite) === true;
}

type PutSyncAnswering<V> = (this: Database<V, string>, key: string, value: V, options: typeof noOverwrite) => unknown;

export class EmbeddedLedgerStore implements LedgerStore {
  readonly kind = "embedded" as const;
  private readonly root: RootDatabase;
  /** One database per live generation (slot = generation % (G + 1)): `<project>\n<usage_key>` → the compact entry. */
  private readonly slots: Database<CompactEntry, string>[];
  /** Which generation each slot holds and when it is due, mirrored in `meta`. */
  private readonly generations: GenerationSlots;
  private readonly meta: Database<number, string>;
  /** Dimension id → `<project>\n<dimension key>`; `dimensionIds` is its reverse, in memory. */
  private readonly dimensions: Database<string, number>;
  private readonly dimensionIds = new Map<string, number>();
  private readonly dimensionById = new Map<number, Dimension>();
  /** Dimensions learnt by the transaction in progress: forgotten again if it aborts, so memory never holds an id the disk does not. */
  private learntInTransaction: string[] = [];
  /** Integer counters: aggregates, period spend, usage to date. */
  private readonly counters: Database<number, string>;
  private readonly budgets: Database<Versioned<StoredBudget>, string>;
  private readonly texts: Database<string, string>;
  private readonly pending: Database<BudgetAlert, string>;
  /** Reservations in flight per `<project>:<period>`. */
  private readonly held = new Map<string, Map<string, Held>>();
  private readonly retentionMs: number;
  private readonly now: () => number;

  constructor(dataDir: string, options: EmbeddedLedgerOptions = {}) {
    this.retentionMs = options.retentionMs ?? defaultRetentionMs;
    this.now = options.now ?? Date.now;
    const dir = join(dataDir, "billing");
    mkdirSync(dir, { recursive: true });
    // maxDbs: the G + 1 generation databases and seven others (lmdb's default allows 12 in all).
    this.root = open({ path: join(dir, "ledger.lmdb"), compression: false, maxDbs: 32 });
    this.meta = this.root.openDB<number, string>({ name: "generations", encoding: "msgpack" });
    this.generations = new GenerationSlots(this.meta, this.retentionMs);
    this.slots = Array.from({ length: this.generations.count }, (_, i) => this.root.openDB<CompactEntry, string>({ name: `calls-${i}`, encoding: "msgpack" }));
    this.dimensions = this.root.openDB<string, number>({ name: "dimensions", encoding: "string" });
    for (const { key, value } of this.dimensions.getRange({})) this.learnDimension(key, value);
    this.counters = this.root.openDB<number, string>({ name: "counters", encoding: "msgpack" });
    this.budgets = this.root.openDB<Versioned<StoredBudget>, string>({ name: "budgets", encoding: "msgpack" });
    this.texts = this.root.openDB<string, string>({ name: "texts", encoding: "string" });
    this.pending = this.root.openDB<BudgetAlert, string>({ name: "pending", encoding: "msgpack" });
    // Before compact entries, every record was kept whole and forever (`entries`, `ids`): dropped
    // here, since reports come from the counters, which are unchanged.
    for (const legacy of ["entries", "ids"]) void this.root.openDB({ name: legacy }).drop();
    this.sweep();
  }

  private learnDimension(id: number, text: string): void {
    const cut = text.indexOf("\n");
    this.dimensionIds.set(text, id);
    this.dimensionById.set(id, parseDimensionKey(text.slice(0, cut), text.slice(cut + 1)));
  }

  private dimensionOf(r: UsageRecord): number {
    const text = `${r.project_id}\n${dimensionKey(r)}`;
    let id = this.dimensionIds.get(text);
    if (id === undefined) {
      id = this.dimensionIds.size + 1;
      this.learnDimension(id, text);
      this.learntInTransaction.push(text);
      // Written with the entry's append; a crash before its commit loses both together.
      this.dimensions.putSync(id, text);
    }
    return id;
  }

  /**
   * Deletes the generations older than the retention window (one drop
   * each) and makes the current one's slot ready; returns that slot. Runs at
   * every append and on the worker's timer, so an idle ledger is swept too;
   * the slot map is on disk, so a restart deletes what expired meanwhile.
   */
  sweep(): Database<CompactEntry, string> {
    const current = this.generations.rotate(this.now(), (i, written) => {
      // Synchronous (one drop of the generation's pages, on the ledger's own thread): reads never see
      // a cleared generation's entries in the slot that now holds the current one.
      if (written) (this.slots[i] as Database<CompactEntry, string>).clearSync();
    });
    return this.slots[current] as Database<CompactEntry, string>;
  }

  /**
   * Whether a live generation other than the current one holds a usage key
   * for a call made at `createdAtMs` (GenerationSlots.mayHold; usually none
   * may). The current generation's check is the append's no-overwrite put.
   */
  private billedEarlier(id: string, createdAtMs: number, current: Database<CompactEntry, string>): boolean {
    for (let i = 0; i < this.slots.length; i++) {
      const slot = this.slots[i];
      if (slot !== current && this.generations.mayHold(i, createdAtMs) && slot?.get(id) !== undefined) return true;
    }
    return false;
  }

  async append(records: UsageRecord[], settle?: Reservation): Promise<BudgetAlert[]> {
    const alerts: BudgetAlert[] = [];
    if (records.length > 0) {
      const slot = this.sweep();
      this.learntInTransaction = [];
      try {
        this.root.transactionSync(() => this.appendInTransaction(records, slot, alerts));
      } catch (error) {
        for (const text of this.learntInTransaction) {
          this.dimensionById.delete(this.dimensionIds.get(text) ?? 0);
          this.dimensionIds.delete(text);
        }
        throw error;
      } finally {
        this.learntInTransaction = [];
      }
    }
    if (settle) this.dropHeld(settle);
    return alerts;
  }

  /** The body of an append's transaction: entries of the records not billed yet, then each counter once. */
  private appendInTransaction(records: UsageRecord[], slot: Database<CompactEntry, string>, alerts: BudgetAlert[]): void {
    const rows = new Map<string, Counts>();
    /** `<dimension id>\t<day>` → its aggregate field: built once per append, not per record. */
    const fields = new Map<string, string>();
    const users = new Map<string, Counts>();
    /** Per budget the append adds to: the project's, and each key's (whether it has a budget or not: one may be set mid-month). */
    const spend = new Map<string, { record: UsageRecord; period: string; nanos: number; apiKeyId: string | undefined }>();
    let added = 0;
    for (const r of records) {
      const id = `${r.project_id}\n${r.usage_key}`;
      const createdMs = Date.parse(r.created_at);
      if (this.billedEarlier(id, createdMs, slot)) continue;
      const dimension = this.dimensionOf(r);
      // No overwrite: false when the current generation holds the usage key already (one B-tree
      // search for the idempotency check and the write together).
      if (!putIfAbsent(slot, id, compactEntry(r, dimension, createdMs))) continue;
      added += 1;
      const period = periodOf(r.created_at);
      const fieldId = `${dimension}\t${r.created_at.slice(0, 10)}`;
      let field = fields.get(fieldId);
      if (field === undefined) {
        field = `agg\t${r.project_id}\t${period}\t${rowKey(r)}`;
        fields.set(fieldId, field);
      }
      const row = countsOf(rows, field);
      row.c += r.cost_nanos;
      row.i += r.input_tokens;
      row.r += r.cached_input_tokens ?? 0;
      row.w += r.cache_write_input_tokens ?? 0;
      row.o += r.output_tokens;
      row.u += unitsMicro(r);
      row.n += 1;
      addUse(users, r.api_key_id, r);
      addUse(users, r.environment_id, r);
      if (r.live) {
        for (const apiKeyId of [undefined, r.api_key_id]) {
          const spentKey = `spent\t${budgetScope(r.project_id, apiKeyId)}\t${period}`;
          const spent = spend.get(spentKey);
          if (spent) spent.nanos += r.cost_nanos;
          else spend.set(spentKey, { record: r, period, nanos: r.cost_nanos, apiKeyId });
        }
      }
    }
    if (added === 0) return;
    const add = (key: string, by: number) => {
      if (by !== 0) this.counters.putSync(key, (this.counters.get(key) ?? 0) + by);
    };
    for (const [field, row] of rows) for (const counter of ["c", "i", "o", "u", "n", "r", "w"] as const) add(`${field}\t${counter}`, row[counter]);
    for (const [user, use] of users) {
      add(`use\t${user}\tc`, use.c);
      add(`use\t${user}\tn`, use.n);
      const last = this.texts.get(`use\t${user}`);
      if (last === undefined || last < use.last) this.texts.putSync(`use\t${user}`, use.last);
    }
    for (const [spentKey, { record, period, nanos, apiKeyId }] of spend) {
      add(spentKey, nanos);
      alerts.push(...this.claimAlerts(record, period, this.counters.get(spentKey) ?? 0, apiKeyId));
    }
  }

  /** Claims each threshold the spend of the project's (or the key's) budget has reached that no earlier append claimed. */
  private claimAlerts(r: UsageRecord, period: string, spent: number, apiKeyId: string | undefined): BudgetAlert[] {
    const scope = budgetScope(r.project_id, apiKeyId);
    const budget = this.budget(scope);
    if (!budget) return [];
    const alerts: BudgetAlert[] = [];
    for (const threshold of budget.alert_thresholds) {
      const claim = `alert\t${scope}\t${period}\t${threshold}`;
      if (spent < thresholdMark(budget, threshold) || this.texts.get(claim) !== undefined) continue;
      this.texts.putSync(claim, String(spent));
      const alert: BudgetAlert = {
        organization_id: r.organization_id,
        project_id: r.project_id,
        ...(apiKeyId ? { api_key_id: apiKeyId } : {}),
        period,
        threshold,
        limit_nanos: limitNanos(budget),
        spent_nanos: spent,
      };
      this.pending.putSync(pendingAlertName(alert), alert);
      alerts.push(alert);
    }
    return alerts;
  }

  private heldOf(reservation: Omit<Reservation, "id">): Map<string, Held> {
    const key = `${budgetScope(reservation.project_id, reservation.api_key_id)}:${reservation.period}`;
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
    if (held.size === 0) this.held.delete(`${budgetScope(reservation.project_id, reservation.api_key_id)}:${reservation.period}`);
  }

  async reserve(reservation: Reservation, amountNanos: number, expiresAtMs: number, nowMs: number): Promise<ReserveOutcome> {
    const scope = budgetScope(reservation.project_id, reservation.api_key_id);
    const budget = this.budget(scope);
    if (!budget?.hard_limit) return { admitted: true };
    const held = this.heldOf(reservation);
    const reserved = heldNow(held, nowMs);
    const spent = this.counters.get(`spent\t${scope}\t${reservation.period}`) ?? 0;
    const limit = limitNanos(budget);
    if (spent + reserved >= limit) return { admitted: false, spent_nanos: spent, reserved_nanos: reserved, limit_nanos: limit };
    held.set(reservation.id, { amount: amountNanos, expiresAt: expiresAtMs });
    return { admitted: true };
  }

  async reserveParts(place: Omit<Reservation, "id">, parts: ReservedPart[], expiresAtMs: number, nowMs: number, restore: boolean): Promise<ReserveOutcome> {
    const scope = budgetScope(place.project_id, place.api_key_id);
    const budget = this.budget(scope);
    if (!budget?.hard_limit) return { admitted: true };
    const held = this.heldOf(place);
    const reserved = heldNow(held, nowMs);
    const spent = this.counters.get(`spent\t${scope}\t${place.period}`) ?? 0;
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

  async putBudget(projectId: string, budget: StoredBudget, apiKeyId?: string): Promise<void> {
    await this.budgets.put(budgetScope(projectId, apiKeyId), { s: SCHEMA_VERSION, v: budget });
  }

  /** `scope`: budgetScope's name of a project's or a key's budget. */
  private budget(scope: string): StoredBudget | undefined {
    const stored = this.budgets.get(scope);
    return stored === undefined ? undefined : opened<StoredBudget>("budget", stored);
  }

  async getBudget(projectId: string, apiKeyId?: string): Promise<StoredBudget | undefined> {
    return this.budget(budgetScope(projectId, apiKeyId));
  }

  async spent(projectId: string, period: string, apiKeyId?: string): Promise<number> {
    return this.counters.get(`spent\t${budgetScope(projectId, apiKeyId)}\t${period}`) ?? 0;
  }

  async records(projectId: string, period: string): Promise<UsageRecord[]> {
    // Committed entries only (lmdb's reads), of every live generation, in the order calls were made.
    const out: UsageRecord[] = [];
    const nowMs = this.now();
    this.slots.forEach((slot, i) => {
      if (!this.generations.live(i, nowMs)) return;
      for (const { key, value } of slot.getRange({ start: `${projectId}\n`, end: `${projectId}\u000b` })) {
        const dimension = this.dimensionById.get(value[0]);
        const record = dimension && expandEntry(key.slice(projectId.length + 1), value, dimension);
        if (record && periodOf(record.created_at) === period) out.push(record);
      }
    });
    return out.sort(byCreation);
  }

  async usageRows(projectId: string, fromPeriod: string, toPeriod: string): Promise<UsageRow[]> {
    const rows = new Map<string, UsageRow>();
    // Periods sort as strings: one range scan over the months that have usage.
    const prefix = `agg\t${projectId}\t`;
    for (const { key, value } of this.counters.getRange({ start: `${prefix}${fromPeriod}\t`, end: `${prefix}${toPeriod}\t\uffff` })) {
      addToRows(rows, key.slice(prefix.length + "YYYY-MM\t".length), value);
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
    await this.pending.remove(pendingAlertName(alert));
  }

  async close(): Promise<void> {
    await this.root.close();
  }
}
