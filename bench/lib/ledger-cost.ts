// What billing costs the event loop, measured in process (immune to the
// load-generator noise of the HTTP figures): the usage recorder's flush of
// 200 chat records (one flush at 1,000 req/s) into the embedded ledger
// through Billing.write, as the gateway does it: on the ledger's own thread
// (ThreadedLedgerStore, the default) and, for comparison, on the caller's
// event loop (EmbeddedLedgerStore, as before). What stays on the event loop
// is each append step's synchronous part (the structured clone of a message,
// or the reads, sums and encoding): the longest step is what a request
// arriving during a flush may wait for (the tail-latency driver), the event
// loop's busy time per record the throughput cost (both include building
// the records, alike for both).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { systemClock } from "../../core/clock.ts";
import { createLogger } from "../../core/log.ts";
import type { UsageRecord } from "../../providers/usage.ts";
import { Billing } from "../../tenancy/billing.ts";
import { EmbeddedDataStore } from "../../tenancy/embedded-data-store.ts";
import { EmbeddedLedgerStore } from "../../tenancy/embedded-ledger-store.ts";
import type { LedgerStore } from "../../tenancy/ledger.ts";
import { ThreadedLedgerStore } from "../../tenancy/threaded-ledger-store.ts";
import { chatUsageRecord } from "./usage-records.ts";

const benchOwner = { organization_id: "org_bench", project_id: "prj_bench", environment_id: "env_bench" };
const chatRecord = (i: number): UsageRecord => chatUsageRecord({ ...benchOwner, api_key_id: `key_bench_${i % 4}` }, `req_bench_${process.pid}_${i}`);

/** Wraps a ledger so each append step's synchronous part (call → promise) is timed. */
function timed(ledger: LedgerStore, steps: number[]): LedgerStore {
  return new Proxy(ledger, {
    get(target, property, receiver) {
      if (property !== "append") return Reflect.get(target, property, receiver);
      return (...args: Parameters<LedgerStore["append"]>) => {
        const started = performance.now();
        const pending = target.append(...args);
        steps.push(performance.now() - started);
        return pending;
      };
    },
  });
}

export interface LedgerCost {
  longestStepMs: number;
  medianStepMs: number;
  busyUsPerRecord: number;
}

/** The ledger on its own thread (the gateway's default), then on this event loop. */
export async function measureLedgerCost(): Promise<{ threaded: LedgerCost; here: LedgerCost }> {
  return {
    threaded: await measureOne((dir) => new ThreadedLedgerStore(dir)),
    here: await measureOne((dir) => new EmbeddedLedgerStore(dir)),
  };
}

async function measureOne(open: (dir: string) => LedgerStore, flushes = 40, perFlush = 200): Promise<LedgerCost> {
  const dir = mkdtempSync(join(tmpdir(), "troupe-bench-ledger-"));
  const ledger = open(dir);
  const store = new EmbeddedDataStore(dir, systemClock);
  const steps: number[] = [];
  const billing = new Billing({ ledger: timed(ledger, steps), store, clock: systemClock, log: createLogger("error") });
  let n = 0;
  const flush = () => billing.write(Array.from({ length: perFlush }, () => chatRecord(n++)));
  for (let i = 0; i < 5; i++) await flush(); // warm-up (JIT, lmdb pages)
  steps.length = 0;
  const before = performance.eventLoopUtilization();
  for (let i = 0; i < flushes; i++) await flush();
  const busyMs = performance.eventLoopUtilization(before).active;
  await ledger.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  steps.sort((a, b) => a - b);
  return {
    longestStepMs: steps.at(-1) ?? 0,
    medianStepMs: steps[Math.floor(steps.length / 2)] ?? 0,
    busyUsPerRecord: (busyMs * 1000) / (flushes * perFlush),
  };
}
