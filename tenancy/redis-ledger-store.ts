// The ledger on Redis: every replica appends to, reserves from and reads the
// same counters, and each step is one Lua script, so the budget rule and the
// once-per-threshold alerts hold exactly whatever the number of replicas.
// Every script declares the keys it touches in KEYS[]. Numbers travel as
// strings: Lua prints large doubles in exponent form, which HINCRBY refuses.
// Per-call entries are compact (tenancy/ledger-entry.ts) and live in one
// hash per project and generation that Redis expires: memory is bounded by
// the calls of 1 + 1/G retention windows plus the per-day counters. A
// generation's hash is named by its start time and listed, with its expiry,
// in the project's generation index, so the usage_key check looks in every
// generation not yet due, also those written under another
// USAGE_RECORD_RETENTION_SECONDS (redis-ledger-scripts.ts).
//
// On a Redis Cluster every key of a project carries the project id as its
// hash tag (`troupe:bill:bud:{prj_…}:2026-03`), so each script touches one
// slot and projects spread over the primaries; an append of several
// projects runs one script per project. Two things differ there: pending
// alerts are kept per project (found by SCAN on each primary), and the usage
// to date of keys and environments (a display figure, never billing), whose
// keys belong to no project slot, is added just after the append from the
// records it reports as new: a crash between the two leaves it short by
// those records. On one Redis the names stay untagged and everything is one
// script, as before (docs/decisions.md).
import { parseVersioned, versionedJson } from "../core/schema-version.ts";
import type { UsageRecord } from "../providers/usage.ts";
import {
  addToRows,
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
import { KnownGenerations } from "./redis-ledger-generations.ts";
import { reservePartsScript } from "./redis-ledger-parts.ts";
import { connectRedis, isCluster, primaries, type RedisClient, type RedisTarget } from "./redis-connection.ts";
import { adoptScript, appendScript, releaseScript, reserveScript, useScript } from "./redis-ledger-scripts.ts";
import {
  byCreation,
  compactEntry,
  defaultRetentionMs,
  dimensionKey,
  entryText,
  expandEntry,
  generationExpiresAtMs,
  generationOf,
  generationStartMs,
  parseDimensionKey,
  liveGenerations,
  parseEntryText,
} from "./ledger-entry.ts";

/** Generation numbers of the ledgers before the index (key names by number): the next, the current and the G before. */
const legacyOffsets = Array.from({ length: liveGenerations + 1 }, (_, i) => 1 - i);

/** Calls of the append script after the index listed generations the replica did not know (each call learns all of them). */
const maxAppendAttempts = 4;

type RedisWithScripts = RedisClient & {
  troupeLedgerAppend(...keysThenArgs: string[]): Promise<[string[], number[], string[]]>;
  troupeLedgerAdopt(...keysThenArgs: string[]): Promise<number>;
  troupeLedgerUse(key: string, costNanos: string, calls: string, lastUsedAt: string): Promise<number>;
  troupeLedgerReserve(bud: string, exp: string, cfg: string, id: string, amount: string, expiresAt: string, now: string): Promise<[number, string, string, string]>;
  troupeLedgerRelease(bud: string, exp: string, id: string): Promise<number>;
  troupeLedgerReserveParts(bud: string, exp: string, cfg: string, ...args: string[]): Promise<[number, string, string, string]>;
};

export class RedisLedgerStore implements LedgerStore {
  readonly kind = "redis" as const;
  private readonly redis: RedisWithScripts;
  private readonly p: string;
  private readonly cluster: boolean;
  private readonly retentionMs: number;
  private readonly now: () => number;
  /** The generation hashes this replica knows to be live, learnt from the append script's refusals. */
  private readonly known = new KnownGenerations();
  /** Projects whose generation hashes of the ledger before the index have been listed in it (once per process). */
  private readonly adopted = new Map<string, Promise<void>>();

  /**
   * `target`: a redis:// URL (one server) or a cluster's seed nodes.
   * `retentionMs`: how long per-call entries are kept (Redis expires each
   * generation's hash); `now`: the clock generations follow.
   */
  constructor(target: string | RedisTarget, prefix = "troupe:bill:", retentionMs = defaultRetentionMs, now: () => number = Date.now) {
    this.retentionMs = retentionMs;
    this.now = now;
    const where = typeof target === "string" ? { url: target } : target;
    this.p = prefix;
    this.cluster = isCluster(where);
    const redis = connectRedis(where, { maxRetriesPerRequest: 2, enableOfflineQueue: true });
    redis.defineCommand("troupeLedgerAppend", { lua: appendScript });
    redis.defineCommand("troupeLedgerAdopt", { lua: adoptScript });
    redis.defineCommand("troupeLedgerUse", { numberOfKeys: 1, lua: useScript });
    redis.defineCommand("troupeLedgerReserve", { numberOfKeys: 3, lua: reserveScript });
    redis.defineCommand("troupeLedgerRelease", { numberOfKeys: 2, lua: releaseScript });
    redis.defineCommand("troupeLedgerReserveParts", { numberOfKeys: 3, lua: reservePartsScript });
    this.redis = redis as RedisWithScripts;
  }

  /** A project id as it appears in key names: its own hash tag in cluster mode. */
  private tag(projectId: string): string {
    return this.cluster ? `{${projectId}}` : projectId;
  }
  /** A budget's period counters: the project's, or (`apiKeyId`) one key's, in the project's slot. */
  private bud(projectId: string, period: string, apiKeyId?: string): string {
    return apiKeyId ? `${this.p}kbud:${this.tag(projectId)}:${apiKeyId}:${period}` : `${this.p}bud:${this.tag(projectId)}:${period}`;
  }
  private exp(projectId: string, period: string, apiKeyId?: string): string {
    return apiKeyId ? `${this.p}kexp:${this.tag(projectId)}:${apiKeyId}:${period}` : `${this.p}exp:${this.tag(projectId)}:${period}`;
  }
  private cfg(projectId: string, apiKeyId?: string): string {
    return apiKeyId ? `${this.p}kcfg:${this.tag(projectId)}:${apiKeyId}` : `${this.p}cfg:${this.tag(projectId)}`;
  }
  private agg(projectId: string, period: string): string {
    return `${this.p}agg:${this.tag(projectId)}:${period}`;
  }
  /** A generation's entries: usage_key → compact entry, expiring with the generation; named by its start (ms). */
  private calls(projectId: string, startMs: number): string {
    return `${this.p}calls:${this.tag(projectId)}:${startMs}`;
  }
  /** The project's generation index: generation hash → when it expires (ms). */
  private generations(projectId: string): string {
    return `${this.p}gens:${this.tag(projectId)}`;
  }
  private dims(projectId: string): string {
    return `${this.p}dims:${this.tag(projectId)}`;
  }
  private use(id: string): string {
    return `${this.p}use:${id}`;
  }
  private periods(projectId: string): string {
    return `${this.p}periods:${this.tag(projectId)}`;
  }
  /** Alerts claimed but not acknowledged: one hash on one Redis, one per project on a cluster. */
  private pending(projectId: string): string {
    return this.cluster ? `${this.p}alerts-pending:${this.tag(projectId)}` : `${this.p}alerts-pending`;
  }

  async append(records: UsageRecord[], settle?: Reservation): Promise<BudgetAlert[]> {
    if (records.length === 0 && !settle) return [];
    if (!this.cluster) return this.appendScript(records, settle, settle?.project_id ?? records[0]?.project_id ?? "");
    // One script per project (one slot each); the settled reservation goes with its project's records.
    const byProject = new Map<string, UsageRecord[]>();
    for (const record of records) byProject.set(record.project_id, [...(byProject.get(record.project_id) ?? []), record]);
    if (settle && !byProject.has(settle.project_id)) byProject.set(settle.project_id, []);
    const alerts = await Promise.all(
      [...byProject].map(([project, group]) => this.appendScript(group, settle?.project_id === project ? settle : undefined, project)),
    );
    return alerts.flat();
  }

  /** One atomic append; `project` names the pending-alerts key (every record is of it in cluster mode). */
  private async appendScript(records: UsageRecord[], settle: Reservation | undefined, project: string): Promise<BudgetAlert[]> {
    const projects = [...new Set(records.map((r) => r.project_id))];
    await Promise.all(projects.map((p) => this.adoptLegacy(p)));
    const nowMs = this.now();
    const current = generationOf(nowMs, this.retentionMs);
    const expiresAt = generationExpiresAtMs(current, this.retentionMs);
    const wire = records.length === 0 ? "[]" : JSON.stringify(records.map(wireRecord));
    for (let attempt = 1; ; attempt++) {
      // Per project: the current generation first (where new entries go), then every other one known live.
      const declared = new Map(projects.map((p) => [p, this.known.live(p, nowMs, this.calls(p, generationStartMs(current, this.retentionMs)))]));
      const gens = Math.max(1, ...[...declared.values()].map((names) => names.length));
      const keys: string[] = [];
      for (const r of records) {
        const names = declared.get(r.project_id) ?? [];
        // Padded with the current generation: every record has the same number of keys.
        keys.push(...names, ...Array.from({ length: gens - names.length }, () => names[0] ?? ""));
        keys.push(this.agg(r.project_id, periodOf(r.created_at)), this.bud(r.project_id, periodOf(r.created_at)), this.cfg(r.project_id));
        keys.push(this.periods(r.project_id), this.dims(r.project_id), this.generations(r.project_id));
        keys.push(this.bud(r.project_id, periodOf(r.created_at), r.api_key_id), this.cfg(r.project_id, r.api_key_id));
        if (!this.cluster) keys.push(this.use(r.api_key_id), this.use(r.environment_id));
      }
      keys.push(this.pending(project));
      if (settle) keys.push(this.bud(settle.project_id, settle.period, settle.api_key_id), this.exp(settle.project_id, settle.period, settle.api_key_id));
      const [alerts, fresh, missing] = await this.redis.troupeLedgerAppend(
        String(keys.length),
        ...keys,
        wire,
        settle?.id ?? "",
        String(gens + (this.cluster ? 8 : 10)),
        String(expiresAt),
        String(gens),
        String(nowMs),
      );
      if (missing.length === 0) {
        // This generation stays named once the next begins: no refusal at each change of generation.
        for (const [p, names] of declared) this.known.learn(p, names[0] ?? "", expiresAt);
        if (this.cluster) await this.addUsageToDate(fresh.map((i) => records[i - 1]).filter((r) => r !== undefined));
        return alerts.map(decodeAlert);
      }
      // Generations another replica (or this one under another retention) wrote: known from now on, then the append again.
      for (let i = 0; i + 2 < missing.length; i += 3) {
        const owner = records[Number(missing[i]) - 1]?.project_id ?? "";
        this.known.learn(owner, missing[i + 1] ?? "", Number(missing[i + 2]));
      }
      if (attempt >= maxAppendAttempts) throw new Error(`ledger append: the generation index of ${projects.join(", ")} kept changing (${attempt} attempts)`);
    }
  }

  /**
   * Once per project and process: the generation hashes a ledger before the
   * index wrote (named by generation number under the current retention)
   * are listed in the index with the expiry Redis holds for them, so a
   * record appended before the upgrade is still found after it.
   */
  private adoptLegacy(projectId: string): Promise<void> {
    let done = this.adopted.get(projectId);
    if (!done) {
      const current = generationOf(this.now(), this.retentionMs);
      const legacy = legacyOffsets.map((g) => this.calls(projectId, current + g));
      done = this.redis.troupeLedgerAdopt(String(legacy.length + 1), this.generations(projectId), ...legacy, String(this.now())).then(() => undefined);
      // A failure is retried at the next append.
      done.catch(() => this.adopted.delete(projectId));
      this.adopted.set(projectId, done);
    }
    return done;
  }

  /** Cluster mode: the new records' cost, calls and last use added to their key's and environment's usage to date. */
  private async addUsageToDate(records: UsageRecord[]): Promise<void> {
    const sums = new Map<string, { c: bigint; n: number; t: string }>();
    for (const r of records) {
      for (const id of [r.api_key_id, r.environment_id]) {
        const sum = sums.get(id) ?? { c: 0n, n: 0, t: "" };
        sum.c += BigInt(r.cost_nanos);
        sum.n += 1;
        if (r.created_at > sum.t) sum.t = r.created_at;
        sums.set(id, sum);
      }
    }
    await Promise.all([...sums].map(([id, sum]) => this.redis.troupeLedgerUse(this.use(id), String(sum.c), String(sum.n), sum.t)));
  }

  async reserve(reservation: Reservation, amountNanos: number, expiresAtMs: number, nowMs: number): Promise<ReserveOutcome> {
    const { project_id: project, period, id, api_key_id: key } = reservation;
    const [admitted, spent, reserved, limit] = await this.redis.troupeLedgerReserve(
      this.bud(project, period, key),
      this.exp(project, period, key),
      this.cfg(project, key),
      id,
      String(amountNanos),
      String(expiresAtMs),
      String(nowMs),
    );
    if (admitted === 1) return { admitted: true };
    return { admitted: false, spent_nanos: Number(spent), reserved_nanos: Number(reserved), limit_nanos: Number(limit) };
  }

  async reserveParts(place: Omit<Reservation, "id">, parts: ReservedPart[], expiresAtMs: number, nowMs: number, restore: boolean): Promise<ReserveOutcome> {
    const { project_id: project, period, api_key_id: key } = place;
    const pairs = parts.flatMap((part) => [part.id, String(part.amount_nanos)]);
    const args = [String(expiresAtMs), String(nowMs), restore ? "1" : "0", ...pairs];
    const [admitted, spent, reserved, limit] = await this.redis.troupeLedgerReserveParts(this.bud(project, period, key), this.exp(project, period, key), this.cfg(project, key), ...args);
    if (admitted === 1) return { admitted: true };
    return { admitted: false, spent_nanos: Number(spent), reserved_nanos: Number(reserved), limit_nanos: Number(limit) };
  }

  async release(reservation: Reservation): Promise<void> {
    const { project_id: project, period, api_key_id: key } = reservation;
    await this.redis.troupeLedgerRelease(this.bud(project, period, key), this.exp(project, period, key), reservation.id);
  }

  async putBudget(projectId: string, budget: StoredBudget, apiKeyId?: string): Promise<void> {
    const cfg = this.cfg(projectId, apiKeyId);
    const fields: Record<string, string> = {
      json: versionedJson(JSON.stringify(budget)),
      limit: String(limitNanos(budget)),
      marks: JSON.stringify(budget.alert_thresholds.map((t) => [t, String(thresholdMark(budget, t))])),
    };
    const multi = this.redis.multi().hset(cfg, fields);
    if (budget.hard_limit) multi.hset(cfg, "hard", fields["limit"] ?? "0");
    else multi.hdel(cfg, "hard");
    // An empty threshold list would encode as {} in Lua: no marks field at all then.
    if (budget.alert_thresholds.length === 0) multi.hdel(cfg, "marks");
    await multi.exec();
  }

  async getBudget(projectId: string, apiKeyId?: string): Promise<StoredBudget | undefined> {
    const raw = await this.redis.hget(this.cfg(projectId, apiKeyId), "json");
    return raw === null ? undefined : (parseVersioned("budget", raw) as StoredBudget);
  }

  async spent(projectId: string, period: string, apiKeyId?: string): Promise<number> {
    return Number((await this.redis.hget(this.bud(projectId, period, apiKeyId), "spent")) ?? "0");
  }

  async records(projectId: string, period: string): Promise<UsageRecord[]> {
    await this.adoptLegacy(projectId);
    const live = await this.redis.zrangebyscore(this.generations(projectId), `(${this.now()}`, "+inf");
    const [dims, ...generations] = await Promise.all([this.redis.hgetall(this.dims(projectId)), ...live.map((name) => this.redis.hgetall(name))]);
    const out: UsageRecord[] = [];
    for (const generation of generations) {
      for (const [usageKey, text] of Object.entries(generation ?? {})) {
        const entry = parseEntryText(text);
        const dimension = dims?.[`#${entry[0]}`];
        const record = dimension === undefined ? undefined : expandEntry(usageKey, entry, parseDimensionKey(projectId, dimension));
        if (record && periodOf(record.created_at) === period) out.push(record);
      }
    }
    return out.sort(byCreation);
  }

  async usageRows(projectId: string, fromPeriod: string, toPeriod: string): Promise<UsageRow[]> {
    const rows = new Map<string, UsageRow>();
    // Only the months that have usage: any range costs what the project used, not its length.
    const periods = (await this.redis.smembers(this.periods(projectId))).filter((p) => p >= fromPeriod && p <= toPeriod);
    for (const period of periods) {
      const all = await this.redis.hgetall(this.agg(projectId, period));
      for (const [field, value] of Object.entries(all)) addToRows(rows, field, Number(value));
    }
    return [...rows.values()];
  }

  async usageToDate(ids: string[]): Promise<Map<string, UsageToDate>> {
    const out = new Map<string, UsageToDate>();
    if (ids.length === 0) return out;
    // One command per id, not a pipeline: on a cluster the ids' keys lie in different slots.
    const results = await Promise.all(ids.map((id) => this.redis.hgetall(this.use(id))));
    ids.forEach((id, i) => {
      const value = results[i] ?? {};
      out.set(id, { cost_nanos: Number(value["c"] ?? 0), calls: Number(value["n"] ?? 0), last_used_at: value["t"] ?? null });
    });
    return out;
  }

  async pendingAlerts(): Promise<BudgetAlert[]> {
    if (!this.cluster) return Object.values(await this.redis.hgetall(this.pending(""))).map(decodeAlert);
    // Every primary's per-project hashes (rare: at start and every few minutes).
    const pattern = `${this.p.replace(/[*?[\]\\]/g, "\\$&")}alerts-pending:*`;
    const keys = new Set<string>();
    for (const node of primaries(this.redis)) {
      let cursor = "0";
      do {
        const [next, found] = await node.scan(cursor, "MATCH", pattern, "COUNT", 1000);
        for (const key of found) keys.add(key);
        cursor = next;
      } while (cursor !== "0");
    }
    const hashes = await Promise.all([...keys].map((key) => this.redis.hgetall(key)));
    return hashes.flatMap((hash) => Object.values(hash).map(decodeAlert));
  }

  async ackAlert(alert: BudgetAlert): Promise<void> {
    await this.redis.hdel(this.pending(alert.project_id), pendingAlertName(alert));
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => undefined);
  }
}

/** A record as the append script reads it. */
function wireRecord(r: UsageRecord): Record<string, string> {
  return {
    k: r.usage_key,
    d: dimensionKey(r),
    e: entryText(compactEntry(r, 0)).slice(2),
    f: rowKey(r),
    c: String(r.cost_nanos),
    i: String(r.input_tokens),
    o: String(r.output_tokens),
    u: String(unitsMicro(r)),
    // Prompt-cache counts only when there are some (the script adds a counter for those it is given).
    ...(r.cached_input_tokens ? { r: String(r.cached_input_tokens) } : {}),
    ...(r.cache_write_input_tokens ? { w: String(r.cache_write_input_tokens) } : {}),
    live: r.live ? "1" : "0",
    t: r.created_at,
    org: r.organization_id,
    project: r.project_id,
    key: r.api_key_id,
    period: periodOf(r.created_at),
  };
}

/** A claimed alert as the append script encodes it: a seventh element names the key of a key's own budget. */
function decodeAlert(raw: string): BudgetAlert {
  const [organization_id, project_id, period, threshold, limit, spent, apiKeyId] = JSON.parse(raw) as [string, string, string, number, string, string, string?];
  return { organization_id, project_id, ...(apiKeyId ? { api_key_id: apiKeyId } : {}), period, threshold, limit_nanos: Number(limit), spent_nanos: Number(spent) };
}
