// The fixture of the two-replica budget lease tests
// (test/tenancy/budget-leases.test.ts, test/tenancy/key-budget-leases.test.ts):
// one ledger two replicas share, an embedded one in this process or one
// Redis with a ledger client per replica, and a replica: Billing over a
// ledger that counts its steps per method (and fails them all once
// `dead`), whose usage recorder is simulated by a flush to Billing.write
// slower than a lease's life, so leases return before the recorder has
// their records.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import type { Clock } from "../../core/clock.ts";
import { createLogger } from "../../core/log.ts";
import type { UsageRecord } from "../../providers/usage.ts";
import { leaseMaxAgeMs } from "../../tenancy/budget-leases.ts";
import { Billing } from "../../tenancy/billing.ts";
import { EmbeddedDataStore } from "../../tenancy/embedded-data-store.ts";
import { EmbeddedLedgerStore } from "../../tenancy/embedded-ledger-store.ts";
import type { LedgerStore } from "../../tenancy/ledger.ts";
import { RedisLedgerStore } from "../../tenancy/redis-ledger-store.ts";
import { midMonthClock } from "./mid-month-clock.ts";
import { startTestRedis } from "./redis.ts";

export interface Replica {
  billing: Billing;
  /** Ledger steps taken, per method. */
  steps: Map<string, number>;
  /** Set: every ledger step fails (kill -9: nothing this replica holds is returned). */
  dead: { value: boolean };
  /** The records the simulated recorder holds until its next flush. */
  buffer: UsageRecord[];
  flusher: NodeJS.Timeout;
}

/**
 * Budgets are monthly: on the real clock a run near a month end would spend
 * part of the budget in each month, so Billing, the ledgers and the records
 * read one mid-month clock. Everything started is stopped at the test's teardown.
 */
export async function startLeaseLedgers(label: string) {
  const clock = midMonthClock();
  const dir = mkdtempSync(join(tmpdir(), `troupe-${label}-`));
  const store = new EmbeddedDataStore(dir, clock);
  const embedded = new EmbeddedLedgerStore(dir, { now: () => clock.now() });
  const redis = await startTestRedis();
  const prefix = `troupe:test-${label}:${process.pid}:`;
  const redisLedger = () => new RedisLedgerStore(redis.url, prefix, undefined, () => clock.now());
  const redisLedgers = [redisLedger(), redisLedger()] as const;
  t.teardown(async () => {
    for (const ledger of redisLedgers) await ledger.close();
    await embedded.close();
    await store.close();
    await redis.stop();
  });
  const log = createLogger("silent");
  /** Both ways two replicas share a ledger. */
  const shared = [
    ["embedded (one ledger shared)", [embedded, embedded]],
    ["Redis (one client per replica)", redisLedgers],
  ] as const;

  function replica(ledger: LedgerStore, replicaClock: Clock = clock): Replica {
    const steps = new Map<string, number>();
    const dead = { value: false };
    const counted = new Proxy(ledger, {
      get(target, property, receiver) {
        const value: unknown = Reflect.get(target, property, receiver);
        if (typeof value !== "function" || property === "kind") return value;
        return (...args: unknown[]) => {
          if (dead.value) return Promise.reject(new Error("the replica is dead"));
          steps.set(String(property), (steps.get(String(property)) ?? 0) + 1);
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const billing = new Billing({ ledger: counted, store, clock: replicaClock, log });
    const r: Replica = { billing, steps, dead, buffer: [], flusher: setInterval(() => undefined, 1 << 30) };
    clearInterval(r.flusher);
    // A recorder slower than a lease's life: returns must carry the records themselves.
    r.flusher = setInterval(() => {
      if (dead.value || r.buffer.length === 0) return;
      const batch = r.buffer.splice(0);
      void billing.write(batch).catch(() => r.buffer.unshift(...batch));
    }, leaseMaxAgeMs * 2);
    return r;
  }

  return { clock, embedded, shared, replica };
}

/** Flushes what the replica's recorder still holds and stops its Billing (a dead one is only stopped flushing). */
export async function stopReplica(r: Replica): Promise<void> {
  clearInterval(r.flusher);
  if (!r.dead.value && r.buffer.length > 0) await r.billing.write(r.buffer.splice(0));
  if (!r.dead.value) await r.billing.stop();
}
