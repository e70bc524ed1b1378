// `node bench/hard-limit-admission.ts [--calls=4000] [--concurrency=64] [--base=<checkout>] [--redis=URL]`:
// what admitting and settling one live call costs in Billing, in process
// (immune to the load-generator noise of bench:chat's HTTP figures on a
// shared machine): a project without a budget and one with a hard limit
// (never reached), over the embedded ledger on its own thread (or the Redis
// ledger with --redis, a key prefix of its own per run), as the gateway runs them — `concurrency` calls in flight, each admit → a
// setImmediate (the provider) → settle, as gateway/billed-call.ts does.
// With --base, the same with that checkout's Billing (e.g. /work/main),
// taking turns in one run so both see the same machine. Prints per-call
// wall time and the event loop's CPU per call.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import type { UsageRecord } from "../providers/usage.ts";

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const calls = Number(args.get("calls") ?? 4000);
const concurrency = Number(args.get("concurrency") ?? 64);
const roots = [{ name: "this checkout", root: join(import.meta.dirname, "..") }, ...(args.has("base") ? [{ name: `base (${args.get("base")})`, root: args.get("base") ?? "" }] : [])];

interface BillingLike {
  admit(payer: unknown, estimate: () => number): undefined | Promise<unknown>;
  settle(reservation: never, record: UsageRecord | undefined): Promise<void>;
  putBudget(projectId: string, budget: unknown): Promise<void>;
  write(batch: UsageRecord[]): Promise<void>;
}

async function billingAt(root: string): Promise<BillingLike> {
  const load = (path: string) => import(pathToFileURL(join(root, path)).href);
  const { systemClock } = await load("core/clock.ts");
  const { createLogger } = await load("core/log.ts");
  const { Billing } = await load("tenancy/billing.ts");
  const { EmbeddedDataStore } = await load("tenancy/embedded-data-store.ts");
  const { ThreadedLedgerStore } = await load("tenancy/threaded-ledger-store.ts");
  const { RedisLedgerStore } = await load("tenancy/redis-ledger-store.ts");
  const dir = mkdtempSync(join(tmpdir(), "troupe-bench-hard-"));
  const redis = args.get("redis");
  const ledger = redis ? new RedisLedgerStore(redis, `troupe:bench-hard:${process.pid}:${roots.findIndex((r) => r.root === root)}:`) : new ThreadedLedgerStore(dir);
  return new Billing({ ledger, store: new EmbeddedDataStore(dir, systemClock), clock: systemClock, log: createLogger("error") }) as BillingLike;
}

let n = 0;
function record(projectId: string): UsageRecord {
  n += 1;
  const id = `req_hard_${process.pid}_${n}`;
  return {
    organization_id: "org_bench", project_id: projectId, environment_id: "env_bench", api_key_id: "key_bench", live: true, category: "chat", model: "gpt-4.1-mini",
    provider: "openai", input_tokens: 12, output_tokens: 8, units: 0, cost_usd: 0.0000176, cost_nanos: 17_600, request_id: id, usage_key: id, created_at: new Date().toISOString(),
  };
}

/** `calls` calls, `concurrency` in flight; the recorder's flush simulated every 16 records. */
async function run(billing: BillingLike, projectId: string): Promise<{ wallUs: number; cpuUs: number }> {
  const payer = { organization_id: "org_bench", project_id: projectId, environment_id: "env_bench", api_key_id: "key_bench", live: true };
  let buffer: UsageRecord[] = [];
  let next = 0;
  const one = async () => {
    const pending = billing.admit(payer, () => 52_448_000); // gpt-4.1-mini: 12 tokens in, 32,768 out at most
    const reservation = pending ? await pending : undefined;
    await new Promise((resolve) => setImmediate(resolve));
    const r = record(projectId);
    if (reservation) await billing.settle(reservation as never, r);
    buffer.push(r);
    if (buffer.length >= 16) {
      const batch = buffer;
      buffer = [];
      void billing.write(batch);
    }
  };
  const worker = async () => {
    while (next++ < calls) await one();
  };
  const cpu = process.cpuUsage();
  const start = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const wallUs = ((performance.now() - start) * 1000) / calls;
  const used = process.cpuUsage(cpu);
  if (buffer.length > 0) await billing.write(buffer);
  return { wallUs, cpuUs: (used.user + used.system) / calls };
}

const targets = [];
for (const { name, root } of roots) {
  const billing = await billingAt(root);
  const budget = { monthly_limit_usd: 1_000_000, alert_thresholds: [0.5, 0.8, 1], hard_limit: true, updated_at: new Date().toISOString() };
  await billing.putBudget("prj_hard", budget);
  targets.push({ name: `${name}, no budget`, billing, project: "prj_none" }, { name: `${name}, hard limit`, billing, project: "prj_hard" });
}
for (const t of targets) await run(t.billing, t.project); // warm-up: JIT, budget caches, the first lease
const results = new Map<string, { wall: number[]; cpu: number[] }>(targets.map((t) => [t.name, { wall: [], cpu: [] }]));
for (let round = 0; round < 3; round++) {
  for (const t of targets) {
    const r = await run(t.billing, t.project);
    results.get(t.name)?.wall.push(r.wallUs);
    results.get(t.name)?.cpu.push(r.cpuUs);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
console.log(`${calls} calls per round, ${concurrency} in flight, 3 rounds taking turns (medians):`);
for (const [name, r] of results) console.log(`  ${name.padEnd(40)} wall ${median(r.wall).toFixed(1).padStart(7)} µs/call   process CPU ${median(r.cpu).toFixed(1).padStart(6)} µs/call`);
process.exit(0);
