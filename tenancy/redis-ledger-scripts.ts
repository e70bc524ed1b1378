// The Redis ledger's Lua scripts (tenancy/redis-ledger-store.ts): each step
// is one script, so it is atomic whatever the number of replicas.
// Per record: KEYS = the generation hashes (ARGV[5] of them: the current
// one first, where a new entry goes, then every other generation the
// replica knows to be live, padded with the current one: an entry in any of
// them is the usage_key's idempotency mark), aggregates, period counters,
// budget, the project's set of periods with usage, its dimensions, its
// generation index, the API key's own period counters and budget (in the
// project's slot), then (one Redis: ARGV[3], the keys per record, is 10
// more than the generations) key usage and environment usage. After them:
// pending alerts, then the settled reservation's period counters and expiry
// set (when ARGV[2] is not ""). ARGV[4]: when the current generation
// expires (ms); ARGV[6]: now (ms).
//
// The generation index (a sorted set: hash name → expiry) lists every
// generation hash written and not yet due, whatever the generation length
// it was written under: a hash is named by its start time, and a change of
// USAGE_RECORD_RETENTION_SECONDS changes the names, not what the index
// lists. A script must declare its keys, so the replica passes the hashes it
// knows; if the index lists a live one it did not pass, nothing is written
// and the script returns them ({i, hash, expiry} triples, i: a record of the
// project) for the replica to call again with them.
// Returns the alerts crossed, the (1-based) indexes of the records that were
// new, and the generations missing (empty when it ran).
export const appendScript = `
local records = cjson.decode(ARGV[1])
local per = tonumber(ARGV[3])
local gens = tonumber(ARGV[5])
local now = ARGV[6]
local n = #records * per
local pending = KEYS[n + 1]
local alerts = {}
local fresh = {}
local missing = {}
local checked = {}
for i = 1, #records do
  local b = (i - 1) * per
  local index = KEYS[b + gens + 6]
  if not checked[index] then
    checked[index] = true
    local declared = {}
    for g = 1, gens do declared[KEYS[b + g]] = true end
    local live = redis.call("ZRANGEBYSCORE", index, "(" .. now, "+inf", "WITHSCORES")
    for j = 1, #live, 2 do
      if not declared[live[j]] then
        table.insert(missing, tostring(i))
        table.insert(missing, live[j])
        table.insert(missing, live[j + 1])
      end
    end
  end
end
if #missing > 0 then return {{}, {}, missing} end
local stamped = {}
local function stamp(current, index)
  if stamped[current] then return end
  stamped[current] = true
  -- Never shorter than it already was: the same start time may have been a longer generation's.
  local due = redis.call("ZSCORE", index, current)
  local untilMs = ARGV[4]
  if due and tonumber(due) > tonumber(untilMs) then untilMs = due end
  redis.call("PEXPIREAT", current, untilMs)
  redis.call("ZADD", index, untilMs, current)
  redis.call("ZREMRANGEBYSCORE", index, "-inf", now)
  local last = redis.call("ZRANGE", index, -1, -1, "WITHSCORES")
  redis.call("PEXPIREAT", index, last[2])
end
local function bump(key, r)
  redis.call("HINCRBY", key, "c", r.c)
  redis.call("HINCRBY", key, "n", 1)
  local last = redis.call("HGET", key, "t")
  if not last or last < r.t then redis.call("HSET", key, "t", r.t) end
end
local function billed(b, k)
  for g = 1, gens do
    if redis.call("HEXISTS", KEYS[b + g], k) == 1 then return true end
  end
  return false
end
for i, r in ipairs(records) do
  local b = (i - 1) * per
  local o = b + gens
  if not billed(b, r.k) then
    table.insert(fresh, i)
    local dims = KEYS[o + 5]
    local d = redis.call("HGET", dims, r.d)
    if not d then
      d = tostring(redis.call("HINCRBY", dims, "#", 1))
      redis.call("HSET", dims, r.d, d, "#" .. d, r.d)
    end
    redis.call("HSET", KEYS[b + 1], r.k, d .. "," .. r.e)
    stamp(KEYS[b + 1], KEYS[o + 6])
    local agg = KEYS[o + 1]
    redis.call("HINCRBY", agg, r.f .. "\\tc", r.c)
    redis.call("HINCRBY", agg, r.f .. "\\ti", r.i)
    redis.call("HINCRBY", agg, r.f .. "\\to", r.o)
    redis.call("HINCRBY", agg, r.f .. "\\tu", r.u)
    redis.call("HINCRBY", agg, r.f .. "\\tn", 1)
    if r.r then redis.call("HINCRBY", agg, r.f .. "\\tr", r.r) end
    if r.w then redis.call("HINCRBY", agg, r.f .. "\\tw", r.w) end
    redis.call("SADD", KEYS[o + 4], r.period)
    if per == gens + 10 then
      bump(KEYS[o + 9], r)
      bump(KEYS[o + 10], r)
    end
    if r.live == "1" then
      -- The project's budget, then the key's own (counted whether it has a budget or not: one may be set mid-month).
      for s = 0, 1 do
        local bud = KEYS[o + 2 + s * 5]
        local cfg = KEYS[o + 3 + s * 5]
        local spent = redis.call("HINCRBY", bud, "spent", r.c)
        local marks = redis.call("HGET", cfg, "marks")
        if marks then
          local limit = redis.call("HGET", cfg, "limit")
          for _, m in ipairs(cjson.decode(marks)) do
            if spent >= tonumber(m[2]) and redis.call("HSETNX", bud, "alert:" .. m[1], tostring(spent)) == 1 then
              local alert
              local name
              if s == 0 then
                alert = cjson.encode({r.org, r.project, r.period, m[1], limit, tostring(spent)})
                name = r.project .. ":" .. r.period .. ":" .. m[1]
              else
                alert = cjson.encode({r.org, r.project, r.period, m[1], limit, tostring(spent), r.key})
                name = r.project .. ":" .. r.key .. ":" .. r.period .. ":" .. m[1]
              end
              redis.call("HSET", pending, name, alert)
              table.insert(alerts, alert)
            end
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
return {alerts, fresh, missing}
`;

// The generation hashes of a ledger before the index (named by generation
// number) listed in it, with the expiry Redis holds for them. KEYS = the
// index, then the hashes; ARGV = now (ms). Returns how many were listed.
export const adoptScript = `
local index = KEYS[1]
local listed = 0
for i = 2, #KEYS do
  local ttl = redis.call("PTTL", KEYS[i])
  if ttl > 0 then
    listed = listed + redis.call("ZADD", index, "NX", string.format("%.0f", tonumber(ARGV[1]) + ttl), KEYS[i])
  end
end
if listed > 0 then
  local last = redis.call("ZRANGE", index, -1, -1, "WITHSCORES")
  redis.call("PEXPIREAT", index, last[2])
end
return listed
`;

// Cluster mode: a key's or environment's usage to date, added after the
// append (ARGV = cost, calls, latest created_at).
export const useScript = `
redis.call("HINCRBY", KEYS[1], "c", ARGV[1])
redis.call("HINCRBY", KEYS[1], "n", ARGV[2])
local last = redis.call("HGET", KEYS[1], "t")
if not last or last < ARGV[3] then redis.call("HSET", KEYS[1], "t", ARGV[3]) end
return 0
`;

// How every reserving script begins (KEYS = period counters, reservation
// expiry set, budget): admitted at once without a hard limit, else the
// reservations expired by `ARGV[nowArg]` (ms) dropped first. Reservations of
// a replica that died mid-call expire, so they cannot hold the budget forever.
export function reservePrelude(nowArg: number): string {
  return `
local bud, exp, cfg = KEYS[1], KEYS[2], KEYS[3]
local limit = redis.call("HGET", cfg, "hard")
if not limit then return {1, 0, 0, 0} end
for _, id in ipairs(redis.call("ZRANGEBYSCORE", exp, "-inf", ARGV[${nowArg}])) do
  local amount = redis.call("HGET", bud, "r:" .. id)
  if amount then
    redis.call("HDEL", bud, "r:" .. id)
    redis.call("HINCRBY", bud, "reserved", 0 - tonumber(amount))
  end
  redis.call("ZREM", exp, id)
end`;
}

// KEYS = period counters, reservation expiry set, budget. ARGV = id, amount,
// expires at (ms), now (ms).
export const reserveScript = `${reservePrelude(4)}
local spent = tonumber(redis.call("HGET", bud, "spent") or "0")
local reserved = tonumber(redis.call("HGET", bud, "reserved") or "0")
if spent + reserved >= tonumber(limit) then return {0, tostring(spent), tostring(reserved), limit} end
redis.call("HSET", bud, "r:" .. ARGV[1], ARGV[2])
redis.call("HINCRBY", bud, "reserved", ARGV[2])
redis.call("ZADD", exp, ARGV[3], ARGV[1])
return {1, 0, 0, 0}
`;

export const releaseScript = `
local amount = redis.call("HGET", KEYS[1], "r:" .. ARGV[1])
if amount then
  redis.call("HDEL", KEYS[1], "r:" .. ARGV[1])
  redis.call("HINCRBY", KEYS[1], "reserved", 0 - tonumber(amount))
end
redis.call("ZREM", KEYS[2], ARGV[1])
return 0
`;

