// `npm run chaos`: breaks a running Troupe cluster under steady load and
// checks that it only loses what was in flight. The cluster is the one
// `npm run cluster` runs (LocalCluster: placement, scheduler, 3 replicas of
// the real gateway, each with its own daprd), on a Redis this script starts
// and reaches through a TCP proxy it can cut, with the OpenAI and Anthropic
// fakes (test/fakes, their real wire formats) as providers. Steady load: agent
// turns, chat completions and video jobs on the simulated video provider
// (bench/chaos/workloads.ts), on a LIVE key so every call is billed, with a
// webhook for job events pointing at a verifying receiver in this process.
// Faults, in sequence:
//   1. kill -9 of one replica and its daprd; then its restart;
//   2. the OpenAI fake fails 20 % of calls (500) and hangs on 5 % (the
//      attempt deadline fires); Anthropic stays healthy;
//   3. Redis cut for 5 s (connections reset, connects refused).
// Per fault: requests in flight at the fault, successes and failures until
// the next fault, and the time until every conversation answers again
// (measured from the fault's end: the kill itself, the restart's start, the
// provider's recovery, Redis' return). Asserts failures ≤ in flight,
// recovery ≤ 10 s, no failure before the first fault, and the workloads'
// invariants (every answered turn in its conversation exactly once, no
// conversation stuck) and, after a drain, the audits (bench/chaos/audits.ts):
// every ended job's webhook event delivered, nothing billed twice in the
// project's ledger. Prints a table and one JSON line; exits 1 when an
// assertion fails.
//
// Video clips go to a MinIO of its own (scripts/minio.sh, the cached build
// .ci/run makes), shared by the replicas as S3 would be in production.
//
// Flags: --replicas=3 --workers=12 (half agents, half chat) --conversations=48
//        --think-ms=20 --provider-fault-s=12 --redis-cut-s=5 --settle-s=6
//        --faults=kill,provider,redis (which faults, in this order) --no-jobs
//        --webhook-retry-scale=0.01 --drain-s=20
//        --keep (leave the cluster's data dir for inspection)
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalCluster, repoDir, requireDaprPrerequisites } from "../test/support/dapr-cluster.ts";
import { startAnthropicFake } from "../test/fakes/anthropic-fake.ts";
import { startOpenAIFake } from "../test/fakes/openai-fake.ts";
import { freePort, waitFor } from "../test/support/net.ts";
import { runScript } from "../test/support/run-script.ts";
import { Balancer } from "./chaos/balancer.ts";
import { SteadyLoad } from "./chaos/steady-load.ts";
import { CuttableProxy } from "../test/support/cuttable-proxy.ts";
import { liveAccount } from "./chaos/live-account.ts";
import { auditLedger, auditWebhooks, subscribeJobEvents, type AuditResult } from "./chaos/audits.ts";
import { startWebhookReceiver } from "../test/fakes/webhook-receiver.ts";
import { agentWorkload, chatWorkload, videoJobWorkload, type Workload } from "./chaos/workloads.ts";

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split(/=(.*)/s).slice(0, 2) as [string, string]));
const num = (name: string, fallback: number) => Number(args.get(name) ?? fallback);
const replicas = num("replicas", 3);
const workers = num("workers", 12);
const conversations = num("conversations", 48);
const thinkMs = num("think-ms", 20);
const providerFaultMs = num("provider-fault-s", 12) * 1000;
const redisCutMs = num("redis-cut-s", 5) * 1000;
const settleMs = num("settle-s", 6) * 1000;
const faults = new Set((args.get("faults") ?? "kill,provider,redis").split(","));
const recoveryLimitMs = 10_000;
const webhookRetryScale = num("webhook-retry-scale", 0.01);
const drainMs = num("drain-s", 20) * 1000;
/** An OpenAI model with an Anthropic equivalent of its tier: `auto` routing can fall back. */
const model = "gpt-4.1-mini";

const runStarted = Date.now();
const say = (line: string) => process.stdout.write(`chaos: ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// The replicas inherit this environment: they use only what this run starts
// (CI exports its shared Redis, Elasticsearch and MinIO for npm test).
for (const name of ["REDIS_URL", "ELASTICSEARCH_URL", "S3_ENDPOINT", "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY", "S3_BUCKET"]) delete process.env[name];

// --- Redis the script controls, behind a cuttable proxy -------------------
// redis-server on PATH (the script runs its own); the Dapr binaries are built or linked by the cluster.
requireDaprPrerequisites({ build: true });
const dataDir = mkdtempSync(join(tmpdir(), "troupe-chaos-"));
const redisPort = await freePort();
const redis = spawn("redis-server", ["--bind", "127.0.0.1", "--port", String(redisPort), "--save", "", "--appendonly", "no", "--dir", dataDir], { stdio: "ignore" });
await waitFor(async () => (await redisPing(redisPort)) === "PONG", 10_000, "redis-server");
const proxy = await CuttableProxy.start(await freePort(), { host: "127.0.0.1", port: redisPort });

// --- MinIO: the replicas share one file store --------------------------------
// Video jobs store each clip and compose them later, possibly on another
// replica after a kill: a replica's local file store would not have them.
const minioEnv = { ...process.env, MINIO_DATA_DIR: join(dataDir, "minio"), S3_BUCKET: "troupe-chaos" };
const s3Env = Object.fromEntries(
  (await runScript("bash", ["scripts/minio.sh", "start"], minioEnv))
    .split("\n")
    .map((line) => line.match(/^(S3_[A-Z_]+)=(.*)$/)?.slice(1, 3) as [string, string] | undefined)
    .filter((pair) => pair !== undefined),
);

// --- Provider fakes ----------------------------------------------------------
const openaiFake = await startOpenAIFake({ apiKey: "chaos-openai" });
const anthropicFake = await startAnthropicFake({ apiKey: "chaos-anthropic" });

// --- The cluster ---------------------------------------------------------------
say(`starting ${replicas} replicas (Dapr placement, scheduler, daprd each; Redis through the proxy on ${proxy.listenPort}); data in ${dataDir}`);
const cluster = new LocalCluster({
  mode: "dapr",
  replicas,
  dataDir,
  appEntry: join(repoDir, "gateway/main.ts"),
  redisUrl: `redis://127.0.0.1:${proxy.listenPort}`,
  appEnv: {
    LOG_LEVEL: "warn",
    DEFAULT_RATE_LIMIT_PER_MINUTE: "10000000",
    OPENAI_API_KEY: "chaos-openai",
    OPENAI_BASE_URL: `${openaiFake.url}/v1`,
    ANTHROPIC_API_KEY: "chaos-anthropic",
    ANTHROPIC_BASE_URL: anthropicFake.url,
    // Per attempt half of it: a hung OpenAI call gives way to Anthropic after 3 s.
    PROVIDER_TIMEOUT_MS: "6000",
    // The webhook receiver runs in this process on 127.0.0.1; retries come
    // 100× sooner than in production (5 s → 50 ms, 5 min → 3 s): within the run.
    OUTBOUND_ALLOW_HOSTS: "127.0.0.1",
    WEBHOOK_RETRY_SCALE: String(webhookRetryScale),
    ...s3Env,
  },
  build: true,
  readyTimeoutMs: 120_000,
  log: say,
});

let exitCode = 1;
const cleanups: (() => Promise<unknown>)[] = [
  () => cluster.stop(),
  () => proxy.stop(),
  async () => redis.kill("SIGKILL"),
  () => openaiFake.close(),
  () => anthropicFake.close(),
  () => runScript("bash", ["scripts/minio.sh", "stop"], minioEnv),
];
const cleanup = async () => {
  for (const step of cleanups) await step().catch(() => undefined);
  if (!args.has("keep")) rmSync(dataDir, { recursive: true, force: true });
};
process.once("SIGINT", () => void cleanup().then(() => process.exit(130)));

try {
  const started = Date.now();
  await cluster.start();
  say(`cluster ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  exitCode = await run();
} catch (error) {
  process.stderr.write(`chaos: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  say(`logs kept in ${dataDir}/logs`);
  args.set("keep", "");
} finally {
  await cleanup();
}
process.exit(exitCode);

// --- The run -------------------------------------------------------------------
interface FaultRow {
  fault: string;
  atMs: number;
  /** The fault is over from here: recovery is measured from it. */
  endedMs: number;
  inFlight: number;
  ok: number;
  failed: number;
  recoveryMs: number | undefined;
  firstFailure?: string;
  /** The most common failure reasons (workload, status, error code) with counts. */
  reasons?: string;
  /** No failure limit: the warm-up row must have none at all. */
  baseline?: boolean;
}

async function run(): Promise<number> {
  const urls = cluster.replicas.map((r) => r.gatewayUrl);
  const account = await liveAccount(urls[0]!, "chaos");
  const client = new Balancer(urls, { authorization: `Bearer ${account.key}` });
  client.startProbing();
  const agentWorkers = Math.ceil(workers / 2);
  const agents = agentWorkload(model, conversations);
  const chat = chatWorkload(model);
  // One worker submits a video job every 2 s (ffmpeg renders are the costly part).
  const videoJobs = args.has("no-jobs") ? undefined : videoJobWorkload({ pauseMs: 2_000, completionTimeoutMs: 90_000 });
  const workloads: [Workload, number][] = [[agents, agentWorkers], [chat, workers - agentWorkers], ...(videoJobs ? [[videoJobs, 1] as [Workload, number]] : [])];
  for (const [workload, n] of workloads) await workload.prepare(client, n);
  // The organization's job events go to a verifying receiver in this process.
  const receiver = await startWebhookReceiver();
  cleanups.push(() => receiver.close());
  await subscribeJobEvents(client, receiver);
  say(`load: ${agentWorkers} workers on ${conversations} agent conversations, ${workers - agentWorkers} on chat completions (${model}, auto routing); ${thinkMs} ms between a worker's requests`);

  const load = new SteadyLoad(client, workloads, thinkMs);
  const kills: { replica: number; atMs: number }[] = [];
  const rows: FaultRow[] = [];
  const begin = (fault: string, baseline = false): FaultRow => {
    const row: FaultRow = { fault, atMs: Date.now(), endedMs: Date.now(), inFlight: load.inFlightNow(), ok: 0, failed: 0, recoveryMs: undefined, baseline };
    rows.push(row);
    say(`${fault}: ${row.inFlight} requests in flight`);
    return row;
  };
  const recover = async (row: FaultRow): Promise<void> => {
    row.recoveryMs = await untilReachable(client, workloads.map(([w]) => w), row.endedMs);
    say(`${row.fault}: every conversation answers again ${row.recoveryMs === undefined ? "— NOT within 30 s" : `${row.recoveryMs} ms after the fault ended`}`);
  };

  load.start();
  begin("warm-up, no fault", true);
  await sleep(settleMs);

  if (faults.has("kill")) {
    // 1. kill -9 of a replica and its daprd, then its restart.
    const victim = replicas - 1;
    const kill = begin(`kill -9 replica ${victim} + its daprd`);
    client.markDown(victim);
    kills.push({ replica: victim, atMs: Date.now() });
    await cluster.killReplica(victim);
    kill.endedMs = Date.now();
    await recover(kill);
    await sleep(settleMs / 2);
    const restart = begin(`restart replica ${victim} + its daprd`);
    const restartStarted = Date.now();
    await cluster.startReplica(victim);
    say(`replica ${victim} ready again in ${Date.now() - restartStarted} ms (placement moves some actors back to it)`);
    restart.endedMs = Date.now();
    await recover(restart);
    await sleep(settleMs);
  }
  if (faults.has("provider")) {
    // 2. One provider fails 20 % of calls and hangs on 5 %.
    const provider = begin("OpenAI fake: 20 % fail (500), 5 % hang");
    Object.assign(openaiFake.faults, { failureRate: 0.2, timeoutRate: 0.05 });
    await sleep(providerFaultMs);
    Object.assign(openaiFake.faults, { failureRate: 0, timeoutRate: 0 });
    provider.endedMs = Date.now();
    await recover(provider);
    await sleep(settleMs);
  }
  if (faults.has("redis")) {
    // 3. Redis unreachable for a while.
    const cut = begin(`Redis cut for ${redisCutMs / 1000} s`);
    await proxy.cut();
    await sleep(redisCutMs);
    await proxy.restore();
    cut.endedMs = Date.now();
    await recover(cut);
    await sleep(settleMs);
  }

  await load.stop();
  const endMs = Date.now();
  rows.forEach((row, i) => {
    const window = load.between(row.atMs, rows[i + 1]?.atMs ?? endMs + 1);
    row.ok = window.filter((r) => r.ok).length;
    const failures = window.filter((r) => !r.ok);
    row.failed = failures.length;
    row.firstFailure = failures[0] ? `${failures[0].workload}: ${failures[0].detail}` : undefined;
    const counts = new Map<string, number>();
    for (const f of failures) {
      const reason = `${f.workload} ${(f.detail ?? "").replace(/"request_id":"[^"]*"/, "").match(/^\S+( \{"error":\{"code":"[a-z_]+")?/)?.[0] ?? ""}`.replace(/\{"error":\{"code":/, "");
      counts.set(reason, (counts.get(reason) ?? 0) + 1);
    }
    row.reasons = [...counts].sort((a, b) => b[1] - a[1]).slice(0, 4).map(([r, n]) => `${n}× ${r}`).join("; ") || undefined;
  });
  const violations: string[] = [];
  for (const [workload] of workloads) violations.push(...(await workload.verify(client)));
  await client.close();
  // Drain: events of the last jobs (and retries of refused ones) still on their way.
  const ended = videoJobs?.final ?? [];
  const lost = videoJobs?.lostSubmissions ?? 0;
  const drainStarted = Date.now();
  while (Date.now() - drainStarted < drainMs && auditWebhooks(receiver, ended, lost).problems.length > 0) await sleep(250);
  say(`drain: ${Date.now() - drainStarted} ms until every ended job's event was delivered (limit ${drainMs / 1000} s)`);
  const audits = [
    auditWebhooks(receiver, ended, lost),
    await auditLedger(`redis://127.0.0.1:${redisPort}`, account.projectId, runStarted, ended, {
      chat: chat.succeeded,
      agentTurns: agents.succeeded,
      killedWindow: { chat: answeredBeforeKill(load, kills, chat.name), agentTurns: answeredBeforeKill(load, kills, agents.name) },
    }),
  ];
  for (const audit of audits) violations.push(...audit.problems);
  return report(rows, violations, client.rerouted, load.records.length, audits);
}

function report(rows: FaultRow[], violations: string[], rerouted: number, total: number, audits: AuditResult[]): number {
  const failedChecks: string[] = [];
  console.log("");
  console.log(`${"fault".padEnd(40)} ${"in flight".padStart(9)} ${"ok".padStart(6)} ${"failed".padStart(6)} ${"recovery".padStart(9)}  verdict`);
  for (const row of rows) {
    const limit = row.baseline ? 0 : row.inFlight;
    const problems: string[] = [];
    if (row.failed > limit) problems.push(`${row.failed} failures > ${limit}${row.baseline ? " (no fault yet)" : " in flight at the fault"}`);
    if (!row.baseline && (row.recoveryMs === undefined || row.recoveryMs > recoveryLimitMs)) problems.push(`recovery ${row.recoveryMs ?? "> 30000"} ms > ${recoveryLimitMs} ms`);
    failedChecks.push(...problems.map((p) => `${row.fault}: ${p}`));
    const recovery = row.baseline ? "—" : row.recoveryMs === undefined ? "> 30 s" : `${(row.recoveryMs / 1000).toFixed(2)} s`;
    console.log(`${row.fault.padEnd(40)} ${String(row.baseline ? "—" : row.inFlight).padStart(9)} ${String(row.ok).padStart(6)} ${String(row.failed).padStart(6)} ${recovery.padStart(9)}  ${problems.length ? "FAIL" : "ok"}`);
    if (row.reasons) console.log(`${"".padEnd(42)}failures: ${row.reasons}`);
    if (row.firstFailure) console.log(`${"".padEnd(42)}first: ${row.firstFailure}`);
  }
  failedChecks.push(...violations);
  console.log("");
  console.log(`requests: ${total} in ${((Date.now() - runStarted) / 1000).toFixed(0)} s of run time; ${rerouted} connects refused by a dead replica and sent to another`);
  console.log(`checks: failures ≤ requests in flight at each fault; every conversation and video job answers within ${recoveryLimitMs / 1000} s of the fault's end; every answered turn in its conversation exactly once, none stuck; every video job completed; every ended job's webhook event delivered (verified, one event id); nothing billed twice`);
  for (const audit of audits) console.log(audit.summary);
  for (const problem of failedChecks) console.log(`FAIL ${problem}`);
  console.log(failedChecks.length ? `chaos: ${failedChecks.length} check(s) failed` : "chaos: all checks passed");
  console.log(JSON.stringify({ bench: "chaos", replicas, workers, conversations, rows: rows.map(({ firstFailure: _, ...r }) => r), rerouted, webhooks: audits[0]?.figures, ledger: audits[1]?.figures, violations }));
  return failedChecks.length ? 1 : 0;
}

/** Successful calls of `workload` a replica answered in the last second before its kill -9 (their usage may not have been flushed). */
function answeredBeforeKill(load: SteadyLoad, kills: { replica: number; atMs: number }[], workload: string): number {
  return load.records.filter((r) => r.ok && r.workload === workload && kills.some((k) => r.replica === k.replica && r.endMs <= k.atMs + 100 && r.endMs >= k.atMs - 1000)).length;
}

/** Polls every workload's resources until all answer; ms from `sinceMs`, or undefined after 30 s. */
async function untilReachable(client: Balancer, workloads: Workload[], sinceMs: number): Promise<number | undefined> {
  let reason: string | undefined;
  while (Date.now() - sinceMs < 30_000) {
    const results = await Promise.all(workloads.map((w) => w.unreachable(client).catch((e: unknown) => ({ total: 1, failing: ["(error)"], firstReason: String(e) }))));
    if (results.every((r) => r.failing.length === 0)) return Date.now() - sinceMs;
    const failing = results.flatMap((r) => r.failing);
    const now = results.find((r) => r.firstReason)?.firstReason;
    if (now !== reason) say(`  ${failing.length} not answering yet, e.g. ${now}`);
    reason = now;
    await sleep(100);
  }
  return undefined;
}

function redisPing(port: number): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn("redis-cli", ["-p", String(port), "ping"], { stdio: ["ignore", "pipe", "ignore"] });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.once("exit", () => resolve(out.trim()));
  });
}
