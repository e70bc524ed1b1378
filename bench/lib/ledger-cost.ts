// What billing costs the event loop, measured in process (immune to the
// load-generator noise of the HTTP figures): the usage recorder's flush of
// 200 chat records (one flush at 1,000 req/s) into the embedded ledger
// through Billing.write, as the gateway does it. The store's writes run on
// lmdb's thread; what stays on the event loop is each append step's
// synchronous part (reads, sums, encoding): the longest step is what a
// request arriving during a flush may wait for (the tail-latency driver),
// the event loop's busy time per record the throughput cost.
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

function chatRecord(i: number): UsageRecord {
  const request_id = `req_bench_${process.pid}_${i}`;
  return {
    organization_id: "org_bench",
    project_id: "prj_bench",
    environment_id: "env_bench",
    api_key_id: `key_bench_${i % 4}`,
    live: true,
    category: "chat",
    model: "gpt-4.1-mini",
    provider: "openai",
    input_tokens: 12,
    output_tokens: 8,
    units: 0,
    cost_usd: 0.0000176,
    cost_nanos: 17_600,
    request_id,
    usage_key: request_id,
    created_at: new Date().toISOString(),
  };
}

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

export async function measureLedgerCost(flushes = 40, perFlush = 200): Promise<{ longestStepMs: number; medianStepMs: number; busyUsPerRecord: number }> {
  const dir = mkdtempSync(join(tmpdir(), "troupe-bench-ledger-"));
  const ledger = new EmbeddedLedgerStore(dir);
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
