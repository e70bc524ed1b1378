// `npm run bench:actors`: 10,000 distinct actors, a trivial method, on each
// actor host in one run. Prints calls/s, p50/p99 latency and process memory
// per host and phase, then one JSON line with every figure.
//
// - embedded: the host in this process, called the way the gateway calls it
//   (callActor), state in lmdb under a temporary data dir.
// - dapr: one replica (the test actor app + its daprd) with placement,
//   scheduler and Redis, started by the cluster library; this process calls
//   through a DaprActorHost client exactly as the gateway does
//   (callActor → daprd HTTP → placement → the replica's callback → turn).
// Phases: "activate" is the first call to each actor (state read from the
// store); "warm" is BENCH_ROUNDS more calls to each, actors in memory.
//
// Environment: BENCH_ACTORS (10000), BENCH_ROUNDS (3), BENCH_HOSTS
// (embedded,dapr), BENCH_CONCURRENCY_EMBEDDED (64), BENCH_CONCURRENCY_DAPR
// (8: the concurrency at which p99 stays under 20 ms on 2 cores), REDIS_URL (use this Redis instead of starting one).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { systemClock } from "../core/clock.ts";
import { createLogger } from "../core/log.ts";
import { eraseDefinition } from "../actors/actor.ts";
import { callActor, type ActorHost } from "../actors/host.ts";
import { EmbeddedActorHost } from "../actors/hosts/embedded/embedded-host.ts";
import { DaprActorHost } from "../actors/hosts/dapr/dapr-host.ts";
import { LocalCluster, repoDir, requireDaprPrerequisites } from "../test/support/dapr-cluster.ts";
import { CounterActor, testActors } from "../test/actors/test-actors.ts";

const env = z
  .object({
    BENCH_ACTORS: z.coerce.number().int().min(1).default(10_000),
    BENCH_ROUNDS: z.coerce.number().int().min(1).default(3),
    BENCH_HOSTS: z.string().default("embedded,dapr"),
    BENCH_CONCURRENCY_EMBEDDED: z.coerce.number().int().min(1).default(64),
    BENCH_CONCURRENCY_DAPR: z.coerce.number().int().min(1).default(8),
    REDIS_URL: z.string().optional(),
  })
  .parse(process.env);

interface PhaseResult {
  host: string;
  phase: string;
  calls: number;
  concurrency: number;
  errors: number;
  seconds: number;
  callsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

const log = createLogger("warn");
const results: PhaseResult[] = [];
const memory: Record<string, Record<string, number>> = {};

/** Calls `ping` on `ids` in order, `concurrency` in flight, timing each call. */
async function drive(host: ActorHost, label: string, phase: string, ids: string[], concurrency: number): Promise<PhaseResult> {
  const latencies = new Float64Array(ids.length);
  let next = 0;
  let errors = 0;
  let firstError = "";
  const started = performance.now();
  const worker = async (): Promise<void> => {
    for (let i = next++; i < ids.length; i = next++) {
      const t0 = performance.now();
      try {
        await callActor(host, CounterActor, ids[i]!, "ping", undefined);
      } catch (error) {
        errors++;
        firstError ||= error instanceof Error ? error.message : String(error);
      }
      latencies[i] = performance.now() - t0;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  latencies.sort();
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]!;
  const result: PhaseResult = {
    host: label,
    phase,
    calls: ids.length,
    concurrency,
    errors,
    seconds: round(seconds),
    callsPerSecond: Math.round(ids.length / seconds),
    p50Ms: round(pct(50)),
    p99Ms: round(pct(99)),
    maxMs: round(latencies[latencies.length - 1]!),
  };
  console.log(
    `${label.padEnd(9)} ${phase.padEnd(8)} ${String(result.calls).padStart(6)} calls  c=${String(concurrency).padStart(3)}  ` +
      `${String(result.callsPerSecond).padStart(7)} calls/s  p50 ${result.p50Ms.toFixed(2)} ms  p99 ${result.p99Ms.toFixed(2)} ms  ` +
      `max ${result.maxMs.toFixed(1)} ms${errors ? `  ERRORS ${errors} (${firstError})` : ""}`,
  );
  results.push(result);
  return result;
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

function rssMb(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Math.round(Number(match[1]) / 1024) : NaN;
}

function actorIds(prefix: string): string[] {
  return Array.from({ length: env.BENCH_ACTORS }, (_, i) => `${prefix}-${i}`);
}

function warmIds(ids: string[]): string[] {
  const out: string[] = [];
  for (let r = 0; r < env.BENCH_ROUNDS; r++) out.push(...ids);
  return out;
}

async function benchEmbedded(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), "troupe-bench-embedded-"));
  const host = new EmbeddedActorHost({ dataDir, idleTimeoutMs: 3_600_000, clock: systemClock, log });
  host.register(testActors.map((d) => eraseDefinition(d)));
  await host.start();
  const ids = actorIds(`emb-${Date.now()}`);
  const before = process.memoryUsage();
  await drive(host, "embedded", "activate", ids, env.BENCH_CONCURRENCY_EMBEDDED);
  await drive(host, "embedded", "warm", warmIds(ids), env.BENCH_CONCURRENCY_EMBEDDED);
  const after = process.memoryUsage();
  const active = host.activeActors().find((a) => a.type === "TestCounter")?.count ?? 0;
  memory.embedded = {
    processRssMb: Math.round(after.rss / 2 ** 20),
    heapUsedMb: Math.round(after.heapUsed / 2 ** 20),
    heapGrowthMb: Math.round((after.heapUsed - before.heapUsed) / 2 ** 20),
    activeActors: active,
  };
  console.log(`embedded  memory: this process RSS ${memory.embedded.processRssMb} MB, heap ${memory.embedded.heapUsedMb} MB (+${memory.embedded.heapGrowthMb} MB for ${active} active actors)`);
  await host.stop();
  rmSync(dataDir, { recursive: true, force: true });
}

async function benchDapr(): Promise<void> {
  requireDaprPrerequisites({ redisUrl: env.REDIS_URL });
  const dataDir = mkdtempSync(join(tmpdir(), "troupe-bench-dapr-"));
  const cluster = await LocalCluster.start({
    mode: "dapr",
    replicas: 1,
    dataDir,
    appEntry: join(repoDir, "test/support/dapr-actor-app.ts"),
    appEnv: { LOG_LEVEL: "warn" },
    ...(env.REDIS_URL ? { redisUrl: env.REDIS_URL } : {}),
  });
  const replica = cluster.replicas[0]!;
  const client = new DaprActorHost({
    daprHost: "127.0.0.1",
    daprHttpPort: Number(new URL(replica.daprHttpUrl!).port),
    callbackPort: 0, // unused: this process only calls
    idleTimeoutMs: 3_600_000,
    clock: systemClock,
    log,
  });
  try {
    await client.start();
    const ids = actorIds(`dapr-${Date.now()}`);
    await drive(client, "dapr", "activate", ids, env.BENCH_CONCURRENCY_DAPR);
    await drive(client, "dapr", "warm", warmIds(ids), env.BENCH_CONCURRENCY_DAPR);
    memory.dapr = {
      appRssMb: rssMb(cluster.appPid(0)),
      daprdRssMb: rssMb(cluster.daprdPid(0)),
      benchClientRssMb: Math.round(process.memoryUsage().rss / 2 ** 20),
    };
    console.log(`dapr      memory: replica app RSS ${memory.dapr.appRssMb} MB, its daprd RSS ${memory.dapr.daprdRssMb} MB (calling process ${memory.dapr.benchClientRssMb} MB)`);
  } finally {
    await client.stop();
    await cluster.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

console.log(`actor benchmark: ${env.BENCH_ACTORS} distinct actors, method TestCounter.ping (no state change), warm rounds ${env.BENCH_ROUNDS}`);
const hosts = env.BENCH_HOSTS.split(",").map((h) => h.trim());
if (hosts.includes("embedded")) await benchEmbedded();
if (hosts.includes("dapr")) await benchDapr();
console.log(JSON.stringify({ results, memory }));
