// What /metrics says about the response cache: decisions by outcome (hit,
// miss, refresh, bypass), bytes served from it and written to it. Counted
// here with plain additions (the hit path pays nothing more) and copied into
// the Prometheus series at scrape time (core/prometheus-metrics.ts, the
// `cache` source that gateway/features/cache.ts adds).
import type { CacheMetricReading } from "../../core/metrics.ts";
import type { CacheOutcome } from "./types.ts";

export class CacheMetrics {
  readonly outcomes: Record<CacheOutcome, number> = { hit: 0, miss: 0, refresh: 0, bypass: 0 };
  /** Bytes of answers served from the cache (their JSON). */
  hitBytes = 0;
  stores = 0;
  /** Compressed bytes written to the store. */
  storedBytes = 0;

  outcome(outcome: CacheOutcome, answerBytes = 0): void {
    this.outcomes[outcome]++;
    if (outcome === "hit") this.hitBytes += answerBytes;
  }

  stored(bytes: number): void {
    this.stores++;
    this.storedBytes += bytes;
  }

  /** The counts as /metrics reads them; `heldBytes` from a store that knows its size at once. */
  reading(heldBytes?: number): CacheMetricReading {
    return { lookups: { ...this.outcomes }, hitBytes: this.hitBytes, stores: this.stores, storedBytes: this.storedBytes, heldBytes };
  }
}
