// The ledger on Redis: every replica appends to, reserves from and reads the
// same counters, and each step is one Lua script, so the budget rule and the
// once-per-threshold alerts hold exactly whatever the number of replicas.
// Every script declares the keys it touches in KEYS[]. Numbers travel as
// strings: Lua prints large doubles in exponent form, which HINCRBY refuses.
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
import { reservePartsScript } from "./redis-ledger-parts.ts";
import { connectRedis, isCluster, primaries, type RedisClient, type RedisTarget } from "./redis-connection.ts";

// Per record: KEYS = ids, ledger list, aggregates, period counters, budget,
// the project's set of periods with usage, then (ARGV[3] = "8", one Redis)
// key usage and environment usage. After them: pending alerts, then the
// settled reservation's period counters and expiry set (when ARGV[2] is not
// ""). Returns the alerts crossed and the (1-based) indexes of the records
// that were new.
const appendScript = `
local records = cjson.decode(ARGV[1])
local per = tonumber(ARGV[3])
local n = #records * per
local pending = KEYS[n + 1]
local alerts = {}
local fresh = {}
local function bump(key, r)
  redis.call("HINCRBY", key, "c", r.c)
  redis.call("HINCRBY", key, "n", 1)
  local last = redis.call("HGET", key, "t")
  if not last or last < r.t then redis.call("HSET", key, "t", r.t) end
end
for i, r in ipairs(records) do
  local b = (i - 1) * per
  if redis.call("HSETNX", KEYS[b + 1], r.k, "1") == 1 then
    table.insert(fresh, i)
    redis.call("RPUSH", KEYS[b + 2], r.json)
    local agg = KEYS[b + 3]
    redis.call("HINCRBY", agg, r.f .. "\\tc", r.c)
    redis.call("HINCRBY", agg, r.f .. "\\ti", r.i)
    redis.call("HINCRBY", agg, r.f .. "\\to", r.o)
    redis.call("HINCRBY", agg, r.f .. "\\tu", r.u)
    redis.call("HINCRBY", agg, r.f .. "\\tn", 1)
    redis.call("SADD", KEYS[b + 6], r.period)
    if per == 8 then
      bump(KEYS[b + 7], r)
      bump(KEYS[b + 8], r)
    end
    if r.live == "1" then
      local bud = KEYS[b + 4]
      local spent = redis.call("HINCRBY", bud, "spent", r.c)
      local marks = redis.call("HGET", KEYS[b + 5], "marks")
      if marks then
        local limit = redis.call("HGET", KEYS[b + 5], "limit")
        for _, m in ipairs(cjson.decode(marks)) do
          if spent >= tonumber(m[2]) and redis.call("HSETNX", bud, "alert:" .. m[1], tostring(spent)) == 1 then
            local alert = cjson.encode({r.org, r.project, r.period, m[1], limit, tostring(spent)})
            redis.call("HSET", pending, r.project .. ":" .. r.period .. ":" .. m[1], alert)
            table.insert(alerts, alert)
          end
        end
      end
    end
  end
end
if ARGV[2] ~= "" then
  local bud, exp = KEYS[n + 2], KEYS[n + 3]
  local amount = redis.call("HGET", bud, "r:" .. ARGV[2])
  if amount then
    redis.call("HDEL", bud, "r:" .. ARGV[2])
    redis.call("HINCRBY", bud, "reserved", 0 - tonumber(amount))
  end
  redis.call("ZREM", exp, ARGV[2])
end
return {alerts, fresh}
`;

// Cluster mode: a key's or environment's usage to date, added after the
// append (ARGV = cost, calls, latest created_at).
const useScript = `
redis.call("HINCRBY", KEYS[1], "c", ARGV[1])
redis.call("HINCRBY", KEYS[1], "n", ARGV[2])
local last = redis.call("HGET", KEYS[1], "t")
if not last or last < ARGV[3] then redis.call("HSET", KEYS[1], "t", ARGV[3]) end
return 0
`;

// KEYS = period counters, reservation expiry set, budget. ARGV = id, amount,
// expires at (ms), now (ms). Reservations of a replica that died mid-call
// expire, so they cannot hold the budget forever.
const reserveScript = `
local bud, exp, cfg = KEYS[1], KEYS[2], KEYS[3]
local limit = redis.call("HGET", cfg, "hard")
if not limit then return {1, 0, 0, 0} end
for _, id in ipairs(redis.call("ZRANGEBYSCORE", exp, "-inf", ARGV[4])) do
  local amount = redis.call("HGET", bud, "r:" .. id)
  if amount then
    redis.call("HDEL", bud, "r:" .. id)
    redis.call("HINCRBY", bud, "reserved", 0 - tonumber(amount))
  end
  redis.call("ZREM", exp, id)
end
local spent = tonumber(redis.call("HGET", bud, "spent") or "0")
local reserved = tonumber(redis.call("HGET", bud, "reserved") or "0")
if spent + reserved >= tonumber(limit) then return {0, tostring(spent), tostring(reserved), limit} end
redis.call("HSET", bud, "r:" .. ARGV[1], ARGV[2])
redis.call("HINCRBY", bud, "reserved", ARGV[2])
redis.call("ZADD", exp, ARGV[3], ARGV[1])
return {1, 0, 0, 0}
`;

const releaseScript = `
local amount = redis.call("HGET", KEYS[1], "r:" .. ARGV[1])
if amount then
  redis.call("HDEL", KEYS[1], "r:" .. ARGV[1])
  redis.call("HINCRBY", KEYS[1], "reserved", 0 - tonumber(amount))
end
redis.call("ZREM", KEYS[2], ARGV[1])
return 0
`;

type RedisWithScripts = RedisClient & {
  troupeLedgerAppend(...keysThenArgs: string[]): Promise<[string[], number[]]>;
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

  /** `target`: a redis:// URL (one server) or a cluster's seed nodes. */
  constructor(target: string | RedisTarget, prefix = "troupe:bill:") {
    const where = typeof target === "string" ? { url: target } : target;
    this.p = prefix;
    this.cluster = isCluster(where);
    const redis = connectRedis(where, { maxRetriesPerRequest: 2, enableOfflineQueue: true });
    redis.defineCommand("troupeLedgerAppend", { lua: appendScript });
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
  private bud(projectId: string, period: string): string {
    return `${this.p}bud:${this.tag(projectId)}:${period}`;
  }
  private exp(projectId: string, period: string): string {
    return `${this.p}exp:${this.tag(projectId)}:${period}`;
  }
  private cfg(projectId: string): string {
    return `${this.p}cfg:${this.tag(projectId)}`;
  }
  private agg(projectId: string, period: string): string {
    return `${this.p}agg:${this.tag(projectId)}:${period}`;
  }
  private ids(projectId: string): string {
    return `${this.p}ids:${this.tag(projectId)}`;
  }
  private ledger(projectId: string, period: string): string {
    return `${this.p}ledger:${this.tag(projectId)}:${period}`;
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
    const keys: string[] = [];
    const wire = records.map((r) => {
      const period = periodOf(r.created_at);
      keys.push(this.ids(r.project_id), this.ledger(r.project_id, period), this.agg(r.project_id, period));
      keys.push(this.bud(r.project_id, period), this.cfg(r.project_id), this.periods(r.project_id));
      if (!this.cluster) keys.push(this.use(r.api_key_id), this.use(r.environment_id));
      return {
        k: r.usage_key,
        json: versionedJson(JSON.stringify(r)),
        f: rowKey(r),
        c: String(r.cost_nanos),
        i: String(r.input_tokens),
        o: String(r.output_tokens),
        u: String(unitsMicro(r)),
        live: r.live ? "1" : "0",
        t: r.created_at,
        org: r.organization_id,
        project: r.project_id,
        period,
      };
    });
    keys.push(this.pending(project));
    if (settle) keys.push(this.bud(settle.project_id, settle.period), this.exp(settle.project_id, settle.period));
    // cjson encodes an empty table as {}: an empty batch is still an array to the loop.
    const [alerts, fresh] = await this.redis.troupeLedgerAppend(
      String(keys.length),
      ...keys,
      wire.length === 0 ? "[]" : JSON.stringify(wire),
      settle?.id ?? "",
      this.cluster ? "6" : "8",
    );
    if (this.cluster) await this.addUsageToDate(fresh.map((i) => records[i - 1]).filter((r) => r !== undefined));
    return alerts.map(decodeAlert);
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
    const { project_id: project, period, id } = reservation;
    const [admitted, spent, reserved, limit] = await this.redis.troupeLedgerReserve(
      this.bud(project, period),
      this.exp(project, period),
      this.cfg(project),
      id,
      String(amountNanos),
      String(expiresAtMs),
      String(nowMs),
    );
    if (admitted === 1) return { admitted: true };
    return { admitted: false, spent_nanos: Number(spent), reserved_nanos: Number(reserved), limit_nanos: Number(limit) };
  }

  async reserveParts(place: Omit<Reservation, "id">, parts: ReservedPart[], expiresAtMs: number, nowMs: number, restore: boolean): Promise<ReserveOutcome> {
    const { project_id: project, period } = place;
    const pairs = parts.flatMap((part) => [part.id, String(part.amount_nanos)]);
    const args = [String(expiresAtMs), String(nowMs), restore ? "1" : "0", ...pairs];
    const [admitted, spent, reserved, limit] = await this.redis.troupeLedgerReserveParts(this.bud(project, period), this.exp(project, period), this.cfg(project), ...args);
    if (admitted === 1) return { admitted: true };
    return { admitted: false, spent_nanos: Number(spent), reserved_nanos: Number(reserved), limit_nanos: Number(limit) };
  }

  async release(reservation: Reservation): Promise<void> {
    await this.redis.troupeLedgerRelease(this.bud(reservation.project_id, reservation.period), this.exp(reservation.project_id, reservation.period), reservation.id);
  }

  async putBudget(projectId: string, budget: StoredBudget): Promise<void> {
    const fields: Record<string, string> = {
      json: versionedJson(JSON.stringify(budget)),
      limit: String(limitNanos(budget)),
      marks: JSON.stringify(budget.alert_thresholds.map((t) => [t, String(thresholdMark(budget, t))])),
    };
    const multi = this.redis.multi().hset(this.cfg(projectId), fields);
    if (budget.hard_limit) multi.hset(this.cfg(projectId), "hard", fields["limit"] ?? "0");
    else multi.hdel(this.cfg(projectId), "hard");
    // An empty threshold list would encode as {} in Lua: no marks field at all then.
    if (budget.alert_thresholds.length === 0) multi.hdel(this.cfg(projectId), "marks");
    await multi.exec();
  }

  async getBudget(projectId: string): Promise<StoredBudget | undefined> {
    const raw = await this.redis.hget(this.cfg(projectId), "json");
    return raw === null ? undefined : (parseVersioned("budget", raw) as StoredBudget);
  }

  async spent(projectId: string, period: string): Promise<number> {
    return Number((await this.redis.hget(this.bud(projectId, period), "spent")) ?? "0");
  }

  async records(projectId: string, period: string): Promise<UsageRecord[]> {
    const raw = await this.redis.lrange(this.ledger(projectId, period), 0, -1);
    return raw.map((text) => parseVersioned("usage-record", text) as UsageRecord);
  }

  async usageRows(projectId: string, fromPeriod: string, toPeriod: string): Promise<UsageRow[]> {
    const rows = new Map<string, UsageRow>();
    // Only the months that have usage: any range costs what the project used, not its length.
    const periods = (await this.redis.smembers(this.periods(projectId))).filter((p) => p >= fromPeriod && p <= toPeriod);
    for (const period of periods) {
      const all = await this.redis.hgetall(this.agg(projectId, period));
      for (const [field, value] of Object.entries(all)) {
        const cut = field.lastIndexOf("\t");
        const key = field.slice(0, cut);
        let row = rows.get(key);
        if (!row) {
          row = { ...parseRowKey(key), cost_nanos: 0, input_tokens: 0, output_tokens: 0, units_micro: 0, calls: 0 };
          rows.set(key, row);
        }
        addCounter(row, field.slice(cut + 1), Number(value));
      }
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
    await this.redis.hdel(this.pending(alert.project_id), `${alert.project_id}:${alert.period}:${alert.threshold}`);
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => undefined);
  }
}

function decodeAlert(raw: string): BudgetAlert {
  const [organization_id, project_id, period, threshold, limit, spent] = JSON.parse(raw) as [string, string, string, number, string, string];
  return { organization_id, project_id, period, threshold, limit_nanos: Number(limit), spent_nanos: Number(spent) };
}
