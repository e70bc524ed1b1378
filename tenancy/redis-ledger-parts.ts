// The Redis script behind LedgerStore.reserveParts (tenancy/ledger.ts): a
// video job's scenes and narration admitted together, only when all of them
// fit under the hard limit, each then held under its own id in the same hash
// and expiry set as a call's reservation (redis-ledger-store.ts), so the
// append script's settle and the release script free them one by one.
import { reservePrelude } from "./redis-ledger-scripts.ts";

// KEYS = period counters, reservation expiry set, budget. ARGV = expires at
// (ms), now (ms), restore ("1": hold what is not held yet, unchecked), then
// id, amount pairs. Returns {admitted, spent, reserved, limit}.
export const reservePartsScript = `${reservePrelude(2)}
if ARGV[3] ~= "1" then
  local spent = tonumber(redis.call("HGET", bud, "spent") or "0")
  local reserved = tonumber(redis.call("HGET", bud, "reserved") or "0")
  local total = 0
  for i = 4, #ARGV, 2 do total = total + tonumber(ARGV[i + 1]) end
  if spent + reserved >= tonumber(limit) or spent + reserved + total > tonumber(limit) then
    return {0, tostring(spent), tostring(reserved), limit}
  end
end
for i = 4, #ARGV, 2 do
  if redis.call("HSETNX", bud, "r:" .. ARGV[i], ARGV[i + 1]) == 1 then
    redis.call("HINCRBY", bud, "reserved", ARGV[i + 1])
  end
  redis.call("ZADD", exp, ARGV[1], ARGV[i])
end
return {1, 0, 0, 0}
`;
