// Per-key requests-per-minute limit: a fixed 60 s window counted in the data
// store, so it is exact across replicas on Redis. Synchronous when the store
// counts in process (embedded), so the hot path awaits nothing.
import { TroupeError } from "../core/errors.ts";
import type { DataStore } from "./data-store.ts";
import type { ApiKeyRecord } from "./types.ts";

export function checkKeyRateLimit(store: DataStore, record: ApiKeyRecord): void | Promise<void> {
  const counterKey = record.id; // key ids are unique and prefixed (key_…): no other counter shares them
  if (store.hitLocal) return enforceLimit(record, store.hitLocal(counterKey, 60_000));
  return store.hit(counterKey, 60_000).then((hit) => enforceLimit(record, hit));
}

function enforceLimit(record: ApiKeyRecord, hit: { count: number; resetInMs: number }): void {
  if (hit.count > record.rate_limit_per_minute) {
    throw new TroupeError("rate_limited", `rate limit of ${record.rate_limit_per_minute} requests per minute exceeded`, {
      retryAfterSeconds: Math.max(1, Math.ceil(hit.resetInMs / 1000)),
    });
  }
}
