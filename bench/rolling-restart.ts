// `npm run rolling-restart`: restarts every replica of a running Troupe
// cluster, one at a time, under steady load, the way the Helm chart's
// RollingUpdate does, and checks that no request fails beyond those in flight
// on the replica being stopped. The cluster is the one `npm run cluster` runs
// (LocalCluster: placement, scheduler, 3 replicas of the real gateway, each
// with its own daprd, one Redis), with the OpenAI fake (test/fakes, its real
// wire format) as the provider. Load: agent turns on conversations
// (ConversationActor, placed on every replica) and chat completions, on a
// LIVE key so every call is billed, through the chaos run's stand-in for a
// Service (bench/chaos/balancer.ts: round robin over replicas whose /readyz
// answers 200).
//
// Each replica in turn, as Kubernetes does with maxUnavailable 0 and a
// preStop sleep (charts/troupe/README.md):
//   1. it leaves the endpoints: the balancer sends it no new request;
//   2. preStop: up to --drain-s for the requests it was sent to end;
//   3. SIGTERM to Troupe: it drains what is left, then hands its actors off
//      (its actor callbacks' /healthz turns 503, daprd's app health check
//      unregisters the types and placement moves them to the other replicas
//      while their calls are still served: ACTOR_HANDOFF_MS) and exits 0;
//      then SIGTERM to its daprd. Read from just before it until it exited:
//      the conversations whose actor it hosts (GET /troupe/active-actors on
//      its loopback actor callback port, actors/README.md); counted at the
//      SIGTERM: the requests it still had through the front;
//   4. a new process and daprd on the same ports and data, until /readyz 200;
//   5. it rejoins the endpoints (placement moves some actors back to it:
//      read right after ready and 1 s later, the conversations it hosts), and
//      the next replica follows after --settle-s.
// Allowed to fail, exactly: the requests sent through it (the front) and
// still in flight at its SIGTERM, and agent turns on a conversation it hosted that were in flight
// while it stopped (SIGTERM → exited: it serves its actors' calls until
// placement moves them, the hand-off) or rejoined (start → ready: placement
// moves actors back in between). Any other failure fails the run and is printed with its reason
// (bench/chaos/hosted-actors.ts).
// Checks: failures within that allowance, every conversation answers after each restart, every answered
// turn in its conversation exactly once (bench/chaos/workloads.ts), each
// ledger usage key once, and the ledger's chat records and billed turns equal
// the successes (plus at most the failures: a failed call may have been
// billed). Prints a table and one JSON line; exits 1 when a check fails.
//
// Flags: --replicas=3 --workers=8 (half agents, half chat) --conversations=24
//        --think-ms=20 --settle-s=3 --drain-s=5 --keep (leave the data dir)
//        --no-drain (SIGTERM at once, no preStop: shows what the drain buys)
//        --no-cordon (the replica stays in the front's endpoints while it stops: fails the audit)
//        --order=app-first|daprd-first|together (which process gets SIGTERM first)
//        --handoff-ms=3000 (the replicas' ACTOR_HANDOFF_MS; 0 shows what it buys)
//        --down-s=0 (how long a stopped replica stays down before its new pod starts, as on a slow
//        reschedule: the other daprds' connections to its address back off meanwhile)
import { mkdtempSync, rmSync } from "node:fs";
import { z } from "zod";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalCluster, repoDir, requireDaprPrerequisites } from "../test/support/dapr-cluster.ts";
import { startOpenAIFake } from "../test/fakes/openai-fake.ts";
import { Balancer } from "./chaos/balancer.ts";
import { SteadyLoad } from "./chaos/steady-load.ts";
import { auditLedger } from "./chaos/audits.ts";
import { liveAccount } from "./chaos/live-account.ts";
import { agentWorkload, chatWorkload, type Workload } from "./chaos/workloads.ts";
import { attributeTurnFailures, hostedActorIds, reasonsOf, type Handover } from "./chaos/hosted-actors.ts";
import type { RequestRecord } from "./chaos/steady-load.ts";
import { CONVERSATION_ACTOR as conversationActor } from "../actors/conversation/conversation-actor.ts";

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split(/=(.*)/s).slice(0, 2) as [string, string]));
const num = (name: string, fallback: number) => Number(args.get(name) ?? fallback);
const replicas = num("replicas", 3);
const workers = num("workers", 8);
const conversations = num("conversations", 24);
const thinkMs = num("think-ms", 20);
const settleMs = num("settle-s", 3) * 1000;
const drainMs = args.has("no-drain") ? 0 : num("drain-s", 5) * 1000;
const downMs = num("down-s", 0) * 1000;
/** Which process gets SIGTERM first: the app (it drains, hands its actors off, exits; then daprd), daprd, or both at once. */
const order = z.enum(["app-first", "daprd-first", "together"]).parse(args.get("order") ?? "app-first");
const recoveryLimitMs = 10_000;
const model = "gpt-4.1-mini";

const runStarted = Date.now();
const say = (line: string) => process.stdout.write(`rolling-restart: ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// The replicas use only what this run starts (CI exports a shared Redis and others for npm test).
for (const name of ["REDIS_URL", "ELASTICSEARCH_URL", "S3_ENDPOINT", "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY", "S3_BUCKET"]) delete process.env[name];
requireDaprPrerequisites({ build: true });
const dataDir = mkdtempSync(join(tmpdir(), "troupe-rolling-"));
const openaiFake = await startOpenAIFake({ apiKey: "rolling-openai" });
const cluster = new LocalCluster({
  mode: "dapr",
  replicas,
  dataDir,
  appEntry: join(repoDir, "gateway/main.ts"),
  appEnv: {
    LOG_LEVEL: "warn",
    DEFAULT_RATE_LIMIT_PER_MINUTE: "10000000",
    OPENAI_API_KEY: "rolling-openai",
    OPENAI_BASE_URL: `${openaiFake.url}/v1`,
    ACTOR_HANDOFF_MS: String(num("handoff-ms", 3000)),
  },
  build: true,
  readyTimeoutMs: 120_000,
  log: say,
});

let exitCode = 1;
const cleanup = async () => {
  await cluster.stop().catch(() => undefined);
  await openaiFake.close().catch(() => undefined);
  if (!args.has("keep")) rmSync(dataDir, { recursive: true, force: true });
};
process.once("SIGINT", () => void cleanup().then(() => process.exit(130)));
try {
  const started = Date.now();
  await cluster.start();
  say(`${replicas} replicas ready in ${((Date.now() - started) / 1000).toFixed(1)} s; data in ${dataDir}`);
  exitCode = await run();
} catch (error) {
  process.stderr.write(`rolling-restart: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  say(`logs kept in ${dataDir}/logs`);
  args.set("keep", "");
} finally {
  await cleanup();
}
process.exit(exitCode);

/** A replica's stop (SIGTERM → exited) or rejoin (start → ready), and the conversations it hosted then. */
type Stage = Handover & { replica: number; kind: "stop" | "rejoin" };

interface RestartRow {
  replica: number;
  atMs: number;
  /** Requests the replica still had at its SIGTERM (sent to it through the front). */
  inFlightAtStop: number;
  /** Conversations whose actor it hosted at its SIGTERM. */
  hostedAtStop: number;
  /** Conversations whose actor it hosted once ready again (right after, and 1 s later). */
  hostedAtRejoin: number;
  /** Of the agent turns that failed, those on a conversation it hosted, in flight while it stopped (SIGTERM → exited) or rejoined (start → ready). */
  turnsExplained: number;
  /** Failures the exact allowance does not explain (agent turns elsewhere or outside the handovers, chat beyond the front's in flight). */
  unexplained: number;
  /** How long its preStop drain took (ms). */
  drainedMs: number;
  /** SIGTERM to exited (app, then daprd). */
  stopMs: number;
  /** Start to /readyz 200. */
  readyMs: number;
  ok: number;
  failed: number;
  recoveryMs: number | undefined;
  /** Failures that ended while it stopped (cordon to exited), and from its start on (placement moves actors back to it). */
  failedStopping: number;
  failedRejoining: number;
  stoppedAtMs: number;
  reasons?: string;
  unexplainedReasons?: string;
}

async function run(): Promise<number> {
  const urls = cluster.replicas.map((r) => r.gatewayUrl);
  const key = await liveAccount(urls[0]!, "rolling");
  const client = new Balancer(urls, { authorization: `Bearer ${key.key}` });
  client.startProbing();
  const agentWorkers = Math.ceil(workers / 2);
  const agents = agentWorkload(model, conversations);
  const chat = chatWorkload(model);
  const workloads: [Workload, number][] = [[agents, agentWorkers], [chat, workers - agentWorkers]];
  for (const [workload, n] of workloads) await workload.prepare(client, n);
  say(`load: ${agentWorkers} workers on ${conversations} agent conversations, ${workers - agentWorkers} on chat completions; ${thinkMs} ms between a worker's requests`);

  const load = new SteadyLoad(client, workloads, thinkMs);
  load.start();
  const warmUpStart = Date.now();
  await sleep(settleMs);
  const rows: RestartRow[] = [];
  const handovers: Stage[] = [];
  for (let i = 0; i < replicas; i++) {
    const row: RestartRow = { replica: i, atMs: Date.now(), inFlightAtStop: 0, hostedAtStop: 0, hostedAtRejoin: 0, turnsExplained: 0, unexplained: 0, drainedMs: 0, stopMs: 0, readyMs: 0, ok: 0, failed: 0, recoveryMs: undefined, failedStopping: 0, failedRejoining: 0, stoppedAtMs: 0 };
    rows.push(row);
    // 1–2. Out of the endpoints; the preStop sleep lets what it was sent end.
    if (!args.has("no-cordon")) client.cordon(i);
    const drainStart = Date.now();
    while (client.inFlightOn(i) > 0 && Date.now() - drainStart < drainMs) await sleep(10);
    row.drainedMs = Date.now() - drainStart;
    // 3. SIGTERM: Troupe drains, exits; then daprd leaves placement.
    const callbackPort = cluster.replicas[i]!.callbackPort;
    const hostedAtStop = await hostedActorIds(callbackPort, conversationActor);
    row.inFlightAtStop = client.inFlightOn(i);
    const stopStart = Date.now();
    // It serves its actors' calls until placement moves them (the hand-off): read what it hosts until it is gone.
    let stopping = true;
    const sampling = (async () => {
      while (stopping) {
        await sleep(200);
        for (const id of await hostedActorIds(callbackPort, conversationActor).catch(() => new Set<string>())) hostedAtStop.add(id);
      }
    })();
    await cluster.stopReplica(i, order);
    stopping = false;
    await sampling;
    row.stopMs = Date.now() - stopStart;
    row.stoppedAtMs = Date.now();
    row.hostedAtStop = hostedAtStop.size;
    handovers.push({ replica: i, kind: "stop", fromMs: stopStart, toMs: row.stoppedAtMs, hosted: hostedAtStop });
    if (downMs > 0) await sleep(downMs);
    // 4. The new pod: same ports and data directory.
    const startAt = Date.now();
    await cluster.startReplica(i);
    const readyAt = Date.now();
    row.readyMs = readyAt - startAt;
    // Actors move back to it lazily (on their next call): read it now and once more 1 s later.
    const hostedAtRejoin = hostedActorIds(callbackPort, conversationActor).then(async (first) => {
      await sleep(1_000);
      return new Set([...first, ...(await hostedActorIds(callbackPort, conversationActor))]);
    });
    // 5. Back in the endpoints once its readiness probe says so.
    client.uncordon(i);
    row.recoveryMs = await untilReachable(client, workloads.map(([w]) => w), Date.now());
    const rejoined = await hostedAtRejoin;
    row.hostedAtRejoin = rejoined.size;
    handovers.push({ replica: i, kind: "rejoin", fromMs: startAt, toMs: readyAt, hosted: rejoined });
    say(`replica ${i}: drained in ${row.drainedMs} ms, ${row.inFlightAtStop} in flight at SIGTERM, stopped in ${row.stopMs} ms, ready again in ${row.readyMs} ms`);
    await sleep(settleMs);
  }
  await load.stop();
  const endMs = Date.now();
  const warmUp = load.between(warmUpStart - 60_000, rows[0]!.atMs);
  rows.forEach((row, i) => {
    const window = load.between(row.atMs, rows[i + 1]?.atMs ?? endMs + 1);
    row.ok = window.filter((r) => r.ok).length;
    const failures = window.filter((r) => !r.ok);
    row.failed = failures.length;
    row.failedStopping = failures.filter((f) => f.endMs < row.stoppedAtMs).length;
    row.failedRejoining = row.failed - row.failedStopping;
    row.reasons = reasonsOf(failures);
    const { explained } = attributeTurnFailures(failures.filter((f) => f.workload === agents.name), handovers.filter((h) => h.replica === row.replica));
    row.turnsExplained = explained.length;
  });
  // The exact allowance over the whole run: a turn is explained by whichever replica's handover it overlapped.
  const afterWarmUp = load.records.filter((r) => !r.ok && r.endMs >= rows[0]!.atMs);
  const turnFailures = afterWarmUp.filter((r) => r.workload === agents.name);
  // Front: sent through the replica and still in flight at its SIGTERM (of any workload).
  const isFront = (f: RequestRecord) => handovers.some((h) => h.kind === "stop" && f.replica === h.replica && f.startMs <= h.fromMs && f.endMs > h.fromMs);
  const frontExplained = afterWarmUp.filter(isFront);
  const turns = attributeTurnFailures(turnFailures.filter((f) => !isFront(f)), handovers);
  const explained = turns.explained;
  const unexplained = [...turns.unexplained, ...afterWarmUp.filter((f) => f.workload !== agents.name && !isFront(f))];
  // Of those, the turns sent after the SIGTERM: the replica still served its actors' calls during the hand-off.
  const sentDuringStop = explained.filter((f) => handovers.some((h) => h.kind === "stop" && f.resource !== undefined && h.hosted.has(f.resource) && f.startMs > h.fromMs && f.startMs <= h.toMs)).length;
  const frontInFlight = frontExplained.length;
  const otherFailures = afterWarmUp.filter((r) => r.workload !== agents.name);
  const beyond = unexplained.length;
  for (const row of rows) {
    const mine = unexplained.filter((f) => f.endMs >= row.atMs && f.endMs < (rows[row.replica + 1]?.atMs ?? endMs + 1));
    row.unexplained = mine.length;
    row.unexplainedReasons = mine.length ? `${reasonsOf(mine)} (${describeUnexplained(mine, handovers)})` : undefined;
  }

  const problems: string[] = [];
  const warmUpFailed = warmUp.filter((r) => !r.ok).length;
  if (warmUpFailed > 0) problems.push(`${warmUpFailed} failures before the first restart`);
  const allowed = frontInFlight + explained.length;
  const failed = rows.reduce((n, r) => n + r.failed, 0);
  if (beyond > 0)
    problems.push(`${failed} failed requests > ${allowed} allowed: ${frontInFlight} sent through a stopped replica and in flight at its SIGTERM + ${explained.length} agent turns on conversations the stopping or rejoining replica hosted, in flight then; ${beyond} beyond: ${reasonsOf(unexplained)}`);
  for (const row of rows) {
    if (row.recoveryMs === undefined || row.recoveryMs > recoveryLimitMs) problems.push(`replica ${row.replica}: every conversation answered ${row.recoveryMs ?? "> 30000"} ms after it was ready again (limit ${recoveryLimitMs} ms)`);
  }
  for (const [workload] of workloads) problems.push(...(await workload.verify(client)));
  await client.close();
  // Each replica flushes its usage to the ledger every 200 ms: the last batches may still be on their way.
  const observed = { chat: chat.succeeded, agentTurns: agents.succeeded, killedWindow: { chat: 0, agentTurns: 0 } };
  let ledger = await auditLedger(cluster.redisUrl, key.projectId, runStarted, [], observed);
  for (const settleStart = Date.now(); ledger.problems.length > 0 && Date.now() - settleStart < 5_000; ) {
    await sleep(250);
    ledger = await auditLedger(cluster.redisUrl, key.projectId, runStarted, [], observed);
  }
  problems.push(...ledger.problems);
  // auditLedger holds the ledger to ≥ the successes; a restart must also bill nothing that did not happen.
  const failedOf = (name: string) => load.records.filter((r) => !r.ok && r.workload === name).length;
  const { chatRecords = 0, agentTurnsBilled = 0 } = ledger.figures;
  if (chatRecords > chat.succeeded + failedOf("chat")) problems.push(`ledger: ${chatRecords} chat records > ${chat.succeeded} successes + ${failedOf("chat")} failures`);
  if (agentTurnsBilled > agents.succeeded + failedOf("agents")) problems.push(`ledger: ${agentTurnsBilled} billed turns > ${agents.succeeded} successes + ${failedOf("agents")} failures`);

  console.log("");
  console.log(`${"restart".padEnd(10)} ${"drain ms".padStart(8)} ${"in flight".padStart(9)} ${"hosted".padStart(6)} ${"rejoin".padStart(6)} ${"stop ms".padStart(8)} ${"ready ms".padStart(8)} ${"ok".padStart(6)} ${"failed".padStart(6)} ${"recovery".padStart(9)}`);
  for (const r of rows) {
    const recovery = r.recoveryMs === undefined ? "> 30 s" : `${(r.recoveryMs / 1000).toFixed(2)} s`;
    console.log(`${`replica ${r.replica}`.padEnd(10)} ${String(r.drainedMs).padStart(8)} ${String(r.inFlightAtStop).padStart(9)} ${String(r.hostedAtStop).padStart(6)} ${String(r.hostedAtRejoin).padStart(6)} ${String(r.stopMs).padStart(8)} ${String(r.readyMs).padStart(8)} ${String(r.ok).padStart(6)} ${String(r.failed).padStart(6)} ${recovery.padStart(9)}`);
    if (r.reasons) console.log(`${"".padEnd(12)}failures (${r.failedStopping} while it stopped, ${r.failedRejoining} after it started again; ${r.turnsExplained} agent turns on conversations it hosted, in flight while it stopped or rejoined): ${r.reasons}`);
    if (r.unexplainedReasons) console.log(`${"".padEnd(12)}NOT explained by the replica hosting the conversation: ${r.unexplained}: ${r.unexplainedReasons}`);
  }
  console.log("");
  console.log(`requests: ${load.records.length} (${warmUp.length} in the warm-up) in ${((Date.now() - runStarted) / 1000).toFixed(0)} s of run time; ${failed} failed (${turnFailures.length} agent turns, ${otherFailures.length} chat); allowed ${allowed}: ${frontInFlight} sent through a stopped replica and in flight at its SIGTERM (${rows.reduce((n, r) => n + r.inFlightAtStop, 0)} were in flight on them then) + ${explained.length} agent turns on conversations the stopping or rejoining replica hosted, in flight then (${sentDuringStop} of them sent after its SIGTERM, during the hand-off; ${rows.reduce((n, r) => n + r.hostedAtStop, 0)} conversations hosted by the stopping replicas, ${rows.reduce((n, r) => n + r.hostedAtRejoin, 0)} by the rejoined ones); ${beyond} beyond`);
  console.log(ledger.summary);
  for (const problem of problems) console.log(`FAIL ${problem}`);
  console.log(problems.length ? `rolling-restart: ${problems.length} check(s) failed` : "rolling-restart: all checks passed");
  console.log(JSON.stringify({ bench: "rolling-restart", replicas, workers, conversations, drainMs, rows: rows.map(({ reasons: _, unexplainedReasons: __, ...r }) => r), failed, allowed, beyond, explainedTurns: explained.length, sentDuringStop, frontInFlight, ledger: ledger.figures, problems }));
  return problems.length ? 1 : 0;
}

/** Polls every workload's resources until all answer; ms from `sinceMs`, or undefined after 30 s. */
async function untilReachable(client: Balancer, workloads: Workload[], sinceMs: number): Promise<number | undefined> {
  while (Date.now() - sinceMs < 30_000) {
    const results = await Promise.all(workloads.map((w) => w.unreachable(client).catch(() => ({ failing: ["(error)"] }))));
    if (results.every((r) => r.failing.length === 0)) return Date.now() - sinceMs;
    await sleep(100);
  }
  return undefined;
}

/** Why each unexplained failure is not covered: its conversation, and the handovers in flight or hosting it. */
function describeUnexplained(failures: RequestRecord[], handovers: readonly Stage[]): string {
  return failures
    .slice(0, 3)
    .map((f) => {
      if (f.resource === undefined) return `${f.workload} request ${f.startMs - runStarted}–${f.endMs - runStarted} ms`;
      const hostedBy = handovers.filter((h) => h.hosted.has(f.resource!)).map((h) => `replica ${h.replica} at its ${h.kind} ${h.fromMs - runStarted}–${h.toMs - runStarted} ms`);
      const during = handovers.filter((h) => f.startMs <= h.toMs && f.endMs > h.fromMs).map((h) => `replica ${h.replica}'s ${h.kind}`);
      return `conversation ${f.resource.slice(0, 8)} turn ${f.startMs - runStarted}–${f.endMs - runStarted} ms; hosted by ${hostedBy.join(", ") || "no stopped/rejoining replica"}; in flight at ${during.join(", ") || "no handover"}`;
    })
    .join("; ");
}
