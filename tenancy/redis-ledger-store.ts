// The ledger on Redis: every replica appends to, reserves from and reads the
// same counters, and each step is one Lua script, so the budget rule and the
// once-per-threshold alerts hold exactly whatever the number of replicas.
// Every script declares the keys it touches in KEYS[]. Numbers travel as
// strings: Lua prints large doubles in exponent form, which HINCRBY refuses.
import { Redis } from "ioredis";
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

const keysPerRecord = 8;

// Per record: KEYS = ids, ledger list, aggregates, period counters, budget,
// key usage, environment usage, the project's set of periods with usage. After them: pending alerts, then the settled
// reservation's period counters and expiry set (when ARGV[2] is not "").
const appendScript = `
local records = cjson.decode(ARGV[1])
local n = #records * ${keysPerRecord}
local pending = KEYS[n + 1]
local alerts = {}
local function bump(key, r)
  redis.call("HINCRBY", key, "c", r.c)
  redis.call("HINCRBY", key, "n", 1)
  local last = redis.call("HGET", key, "t")
  if not last or last < r.t then redis.call("HSET", key, "t", r.t) end
end
for i, r in ipairs(records) do
  local b = (i - 1) * ${keysPerRecord}
  if redis.call("HSETNX", KEYS[b + 1], r.k, "1") == 1 then
    redis.call("RPUSH", KEYS[b + 2], r.json)
    local agg = KEYS[b + 3]
    redis.call("HINCRBY", agg, r.f .. "\\tc", r.c)
    redis.call("HINCRBY", agg, r.f .. "\\ti", r.i)
    redis.call("HINCRBY", agg, r.f .. "\\to", r.o)
    redis.call("HINCRBY", agg, r.f .. "\\tu", r.u)
    redis.call("HINCRBY", agg, r.f .. "\\tn", 1)
    bump(KEYS[b + 6], r)
    bump(KEYS[b + 7], r)
    redis.call("SADD", KEYS[b + 8], r.period)
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
    redis.call("HINCRBY", bud, "reserved", -tonumber(amount))
  end
  redis.call("ZREM", exp, ARGV[2])
end
return alerts
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
    redis.call("HINCRBY", bud, "reserved", -tonumber(amount))
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
  redis.call("HINCRBY", KEYS[1], "reserved", -tonumber(amount))
end
redis.call("ZREM", KEYS[2], ARGV[1])
return 0
`;

type RedisWithScripts = Redis & {
  troupeLedgerAppend(...keysThenArgs: string[]): Promise<string[]>;
  troupeLedgerReserve(bud: string, exp: string, cfg: string, id: string, amount: string, expiresAt: string, now: string): Promise<[number, string, string, string]>;
  troupeLedgerRelease(bud: string, exp: string, id: string): Promise<number>;
};

export class RedisLedgerStore implements LedgerStore {
  readonly kind = "redis" as const;
  private readonly redis: RedisWithScripts;
  private readonly p: string;

  constructor(url: string, prefix = "troupe:bill:") {
    this.p = prefix;
    const redis = new Redis(url, { maxRetriesPerRequest: 2, enableOfflineQueue: true });
    redis.defineCommand("troupeLedgerAppend", { lua: appendScript });
    redis.defineCommand("troupeLedgerReserve", { numberOfKeys: 3, lua: reserveScript });
    redis.defineCommand("troupeLedgerRelease", { numberOfKeys: 2, lua: releaseScript });
    this.redis = redis as RedisWithScripts;
  }

  private bud(projectId: string, period: string): string {
    return `${this.p}bud:${projectId}:${period}`;
  }
  private exp(projectId: string, period: string): string {
    return `${this.p}exp:${projectId}:${period}`;
  }
  private cfg(projectId: string): string {
    return `${this.p}cfg:${projectId}`;
  }
  private agg(projectId: string, period: string): string {
    return `${this.p}agg:${projectId}:${period}`;
  }
  private use(id: string): string {
    return `${this.p}use:${id}`;
  }
  private periods(projectId: string): string {
    return `${this.p}periods:${projectId}`;
  }
  private get pending(): string {
    return `${this.p}alerts-pending`;
  }

  async append(records: UsageRecord[], settle?: Reservation): Promise<BudgetAlert[]> {
    if (records.length === 0 && !settle) return [];
    const keys: string[] = [];
    const wire = records.map((r) => {
      const period = periodOf(r.created_at);
      keys.push(
        `${this.p}ids:${r.project_id}`,
        `${this.p}ledger:${r.project_id}:${period}`,
        this.agg(r.project_id, period),
        this.bud(r.project_id, period),
        this.cfg(r.project_id),
        this.use(r.api_key_id),
        this.use(r.environment_id),
        this.periods(r.project_id),
      );
      return {
        k: r.usage_key,
        json: JSON.stringify(r),
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
    keys.push(this.pending);
    if (settle) keys.push(this.bud(settle.project_id, settle.period), this.exp(settle.project_id, settle.period));
    // cjson encodes an empty table as {}: an empty batch is still an array to the loop.
    const raw = await this.redis.troupeLedgerAppend(String(keys.length), ...keys, wire.length === 0 ? "[]" : JSON.stringify(wire), settle?.id ?? "");
    return raw.map(decodeAlert);
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

  async release(reservation: Reservation): Promise<void> {
    await this.redis.troupeLedgerRelease(this.bud(reservation.project_id, reservation.period), this.exp(reservation.project_id, reservation.period), reservation.id);
  }

  async putBudget(projectId: string, budget: StoredBudget): Promise<void> {
    const fields: Record<string, string> = {
      json: JSON.stringify(budget),
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
    return raw === null ? undefined : (JSON.parse(raw) as StoredBudget);
  }

  async spent(projectId: string, period: string): Promise<number> {
    return Number((await this.redis.hget(this.bud(projectId, period), "spent")) ?? "0");
  }

  async records(projectId: string, period: string): Promise<UsageRecord[]> {
    const raw = await this.redis.lrange(`${this.p}ledger:${projectId}:${period}`, 0, -1);
    return raw.map((text) => JSON.parse(text) as UsageRecord);
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
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.hgetall(this.use(id));
    const results = (await pipeline.exec()) ?? [];
    ids.forEach((id, i) => {
      const value = (results[i]?.[1] ?? {}) as Record<string, string>;
      out.set(id, { cost_nanos: Number(value["c"] ?? 0), calls: Number(value["n"] ?? 0), last_used_at: value["t"] ?? null });
    });
    return out;
  }

  async pendingAlerts(): Promise<BudgetAlert[]> {
    return Object.values(await this.redis.hgetall(this.pending)).map(decodeAlert);
  }

  async ackAlert(alert: BudgetAlert): Promise<void> {
    await this.redis.hdel(this.pending, `${alert.project_id}:${alert.period}:${alert.threshold}`);
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => undefined);
  }
}

function decodeAlert(raw: string): BudgetAlert {
  const [organization_id, project_id, period, threshold, limit, spent] = JSON.parse(raw) as [string, string, string, number, string, string];
  return { organization_id, project_id, period, threshold, limit_nanos: Number(limit), spent_nanos: Number(spent) };
}
