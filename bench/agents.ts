// `npm run bench:agents`: the many-concurrent-agents driver load testers
// use. Over HTTP through the real gateway (API key, validation, actor call,
// model loop against the simulated provider, state commit): creates N
// conversations, then runs M rounds of one turn per conversation, on the
// embedded host and on local Dapr (one replica) in one run. Prints turns/s,
// p50/p99 turn latency, errors and the replica's memory, then one JSON line.
// An idle phase creates many more conversations on the embedded host and
// reports the memory they hold. The scale phase (--scale=N) creates N
// conversations on one embedded Troupe while turns keep --active of them
// busy, printing memory over time, then RSS and the store's size on disk
// (bench/lib/agent-scale.ts). Every phase reports Troupe's own CPU time per
// request (its user + system time over the phase, /proc) and the load
// generator's, comparable where a busy machine makes rates move; on Dapr
// also each daprd's and Redis's (a turn's CPU is spread over all of them).
//
// Flags: --conversations=10000 --turns=3 --concurrency=128 (embedded) --dapr-concurrency=24
//        (turns in flight; Dapr's p99 target is for a load it can absorb)
//        --hosts=embedded,dapr
//        --idle=100000 (0 skips) --script="say ok" (the user message; e.g.
//        "remember: fact; then search_memory: fact; then answer" exercises
//        the built-in tools)
//        --scale=1000000 (0 skips) --active=10000 --creators=96 --talkers=32 --sample-seconds=10
//        --memory-limit-mib=1024 (the embedded Troupe runs in a memory cgroup of
//        that limit, as under a container's; needs root: bench/lib/memory-cgroup.ts)
//        --scale-host=dapr --scale-replicas=2 (the scale phase on a local Dapr
//        cluster with its own Redis: Redis's used_memory per conversation, and
//        per replica its RSS, the copies in its memory and daprd's active count)
//        --max-resident=N (ACTOR_MAX_RESIDENT for the scale phase's Troupe)
//        --baseline=DIR --pairs=7 (embedded only: this tree's Troupe and the one in DIR, e.g.
//        `git worktree add /tmp/base HEAD`, take turns --pairs times, first one then the
//        other, each a fresh server; then the median Troupe CPU per turn of each and their
//        ratio: on a busy machine only figures measured side by side compare)
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { LocalCluster, repoDir, requireDaprPrerequisites } from "../test/support/dapr-cluster.ts";
import { freePort, waitFor } from "../test/support/net.ts";
import { runScale } from "./lib/agent-scale.ts";
import { createMemoryCgroup, type MemoryCgroup } from "./lib/memory-cgroup.ts";
import { drive, rssMiB, type Job } from "./lib/http-driver.ts";
import { cpuSeconds, machineCpuTicks, threadSchedMs, type ThreadTime } from "./lib/proc-stats.ts";
import { fmt, summarize } from "../load/stats.ts";

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split(/=(.*)/s).slice(0, 2) as [string, string]));
const conversations = Number(args.get("conversations") ?? 10_000);
const turns = Number(args.get("turns") ?? 3);
const concurrency = Number(args.get("concurrency") ?? 128);
const daprConcurrency = Number(args.get("dapr-concurrency") ?? 24);
const hosts = (args.get("hosts") ?? "embedded,dapr").split(",");
const idle = Number(args.get("idle") ?? 100_000);
const script = args.get("script") ?? "say ok";
const scale = Number(args.get("scale") ?? 0);
const active = Number(args.get("active") ?? 10_000);
const creators = Number(args.get("creators") ?? 96);
const talkers = Number(args.get("talkers") ?? 32);
const sampleSeconds = Number(args.get("sample-seconds") ?? 10);
const memoryLimitMiB = args.has("memory-limit-mib") ? Number(args.get("memory-limit-mib")) : undefined;
const scaleHost = args.get("scale-host") ?? "embedded";
const scaleReplicas = Number(args.get("scale-replicas") ?? 2);
const baselineDir = args.get("baseline");
const pairs = Number(args.get("pairs") ?? 7);
if (scaleHost !== "embedded" && scaleHost !== "dapr") throw new Error(`--scale-host must be embedded or dapr, got ${scaleHost}`);
const appEnv = { LOG_LEVEL: "warn", DEFAULT_RATE_LIMIT_PER_MINUTE: "10000000" };

interface Server {
  url: string;
  dataDir: string;
  pid(): number | undefined;
  stop(): Promise<void>;
  /** Set when the server runs under --memory-limit-mib. */
  cgroup?: MemoryCgroup;
  /** The cluster's Redis (Dapr). */
  redisUrl?: string;
  /** Per replica (Dapr): RSS, actors in the app's memory, and daprd's active count. */
  residency?: () => Promise<string[]>;
  /** Processes beside Troupe that serve each turn (Dapr: every daprd and Redis), whose CPU per request is reported too. */
  beside?: Array<{ name: string; pid: number | undefined }>;
}

async function startEmbedded(env: Record<string, string> = {}, appDir = repoDir): Promise<Server> {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), "troupe-bench-agents-"));
  // TROUPE_NODE_OPTIONS, e.g. --cpu-prof --cpu-prof-dir=/tmp/prof, profiles the server.
  const nodeOptions = (process.env["TROUPE_NODE_OPTIONS"] ?? "").split(" ").filter(Boolean);
  const cgroup = memoryLimitMiB === undefined ? undefined : createMemoryCgroup(memoryLimitMiB);
  const start = { command: process.execPath, args: [...nodeOptions, join(appDir, "gateway/main.ts")] };
  const { command, args: commandArgs } = cgroup ? cgroup.wrap(start.command, start.args) : start;
  const child: ChildProcess = spawn(command, commandArgs, {
    env: { ...process.env, ...appEnv, ...env, PORT: String(port), HOST: "127.0.0.1", TROUPE_DATA_DIR: dataDir },
    stdio: "ignore",
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`${url}/readyz`)).ok, 30_000, "embedded troupe");
  const stop = async () => {
    child.kill("SIGTERM");
    await exited;
    cgroup?.remove();
  };
  return { url, dataDir, pid: () => child.pid, stop, ...(cgroup ? { cgroup } : {}) };
}

async function startDapr(replicas = 1, env: Record<string, string> = {}): Promise<Server> {
  requireDaprPrerequisites({ build: true, ...(process.env["REDIS_URL"] ? { redisUrl: process.env["REDIS_URL"] } : {}) });
  const cluster = new LocalCluster({
    mode: "dapr",
    replicas,
    dataDir: mkdtempSync(join(tmpdir(), "troupe-bench-agents-dapr-")),
    appEntry: join(repoDir, "gateway/main.ts"),
    appEnv: { ...appEnv, ...env },
    build: true,
    ...(process.env["REDIS_URL"] ? { redisUrl: process.env["REDIS_URL"] } : {}),
  });
  await cluster.start();
  const count = (lists: Record<string, string[]>) => Object.values(lists).reduce((n, ids) => n + ids.length, 0);
  const residency = () =>
    Promise.all(
      cluster.replicas.map(async (replica) => {
        const inMemory = count((await (await fetch(`http://127.0.0.1:${replica.callbackPort}/troupe/active-actors`)).json()) as Record<string, string[]>);
        const meta = (await (await fetch(`${replica.daprHttpUrl}/v1.0/metadata`)).json()) as { actorRuntime?: { activeActors?: Array<{ count?: number }> } };
        const daprdActive = (meta.actorRuntime?.activeActors ?? []).reduce((n, a) => n + (a.count ?? 0), 0);
        return `replica ${replica.index}: rss ${fmt(await rssMiB(cluster.appPid(replica.index)), 0)} MiB, ${inMemory} actors in its memory, ${daprdActive} active in its daprd`;
      }),
    );
  const beside = [
    ...cluster.replicas.map((replica) => ({ name: `daprd ${replica.index}`, pid: cluster.daprdPid(replica.index) })),
    { name: "redis", pid: await redisPid(cluster.redisUrl) },
  ];
  return { url: cluster.replicas[0]?.gatewayUrl ?? "", dataDir: "", pid: () => cluster.appPid(0), stop: () => cluster.stop(), redisUrl: cluster.redisUrl, residency, beside };
}

/** The pid a Redis reports (INFO server), when that process runs on this machine. */
async function redisPid(url: string): Promise<number | undefined> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    const pid = Number(/process_id:(\d+)/.exec(await redis.info("server"))?.[1]);
    const command = Number.isInteger(pid) ? await readFile(`/proc/${pid}/comm`, "utf8").catch(() => "") : "";
    return command.startsWith("redis") ? pid : undefined;
  } finally {
    redis.disconnect();
  }
}

async function keyFor(url: string): Promise<string> {
  const post = async (path: string, body: unknown, token?: string) => {
    const res = await fetch(url + path, {
      method: "POST",
      headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
    return (await res.json()) as Record<string, unknown>;
  };
  const signup = (await post("/v1/auth/signup", { email: `bench-${Date.now()}@example.test`, password: "benchmark-password" })) as {
    session_token: string;
    environments: { environment: { id: string } }[];
  };
  const env = signup.environments[1]?.environment.id;
  const key = await post(`/v1/environments/${env}/api-keys`, { name: "bench", rate_limit_per_minute: 10_000_000 }, signup.session_token);
  return String(key["key"]);
}

interface Row {
  host: string;
  phase: string;
  count: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  rssMiB: number;
  /** Troupe's user + system CPU per request of the phase, and the load generator's (this process). */
  troupeCpuUs: number;
  loadgenCpuUs: number;
  /** Milliseconds a second Troupe's main thread ran, and was ready to run with no CPU free; the share of the machine's CPUs busy: what bounded the phase. */
  troupeMainRanMsPerSecond: number;
  troupeMainWaitedMsPerSecond: number;
  machineBusyPercent: number;
}

interface CpuMark {
  troupe: number;
  loadgen: NodeJS.CpuUsage;
  beside: number[];
  troupeMain: ThreadTime;
  machine: { busy: number; total: number };
}
const cpuMark = async (server: Server): Promise<CpuMark> => ({
  troupe: await cpuSeconds(server.pid()),
  loadgen: process.cpuUsage(),
  beside: await Promise.all((server.beside ?? []).map(({ pid }) => cpuSeconds(pid))),
  troupeMain: (await threadSchedMs(server.pid())).main,
  machine: await machineCpuTicks(),
});

const rows: Row[] = [];
async function report(host: string, phase: string, r: Awaited<ReturnType<typeof drive>>, server: Server, since: CpuMark): Promise<void> {
  const s = summarize(r.latenciesMs);
  const rss = await rssMiB(server.pid());
  const troupeCpu = (await cpuSeconds(server.pid())) - since.troupe;
  const loadgen = process.cpuUsage(since.loadgen);
  const requests = Math.max(1, s.count + r.errors);
  const troupeCpuUs = (troupeCpu * 1e6) / requests;
  const loadgenCpuUs = (loadgen.user + loadgen.system) / requests;
  const troupeMain = (await threadSchedMs(server.pid())).main;
  const troupeMainRanMsPerSecond = (troupeMain.ranMs - since.troupeMain.ranMs) / r.seconds;
  const troupeMainWaitedMsPerSecond = (troupeMain.waitedMs - since.troupeMain.waitedMs) / r.seconds;
  const machine = await machineCpuTicks();
  const machineBusyPercent = (100 * (machine.busy - since.machine.busy)) / (machine.total - since.machine.total);
  const row = { host, phase, count: s.count, perSecond: s.count / r.seconds, p50Ms: s.p50, p99Ms: s.p99, errors: r.errors, rssMiB: rss, troupeCpuUs, loadgenCpuUs, troupeMainRanMsPerSecond, troupeMainWaitedMsPerSecond, machineBusyPercent };
  rows.push(row);
  console.log(
    `${host.padEnd(9)} ${phase.padEnd(7)} ${String(row.count).padStart(7)} in ${fmt(r.seconds, 1)} s  ${fmt(row.perSecond, 0).padStart(6)}/s  p50 ${fmt(row.p50Ms)} ms  p99 ${fmt(row.p99Ms)} ms  errors ${row.errors}  rss ${fmt(rss, 0)} MiB  cpu/req troupe ${fmt(troupeCpuUs, 0)} µs, load generator ${fmt(loadgenCpuUs, 0)} µs`,
  );
  console.log(
    `          Troupe's main thread ran ${fmt(troupeMainRanMsPerSecond, 0)} ms/s and waited for a CPU ${fmt(troupeMainWaitedMsPerSecond, 0)} ms/s; machine ${fmt(machineBusyPercent, 0)} % busy`,
  );
  const beside = await Promise.all(
    (server.beside ?? []).map(async ({ name, pid }, i) => `${name} ${fmt((((await cpuSeconds(pid)) - (since.beside[i] ?? Number.NaN)) * 1e6) / requests, 0)} µs`),
  );
  if (beside.length > 0) console.log(`          cpu/req beside troupe: ${beside.join(", ")}`);
  if (r.firstError) console.log(`          first error: ${r.firstError}`);
}

async function run(host: string, server: Server, concurrency: number): Promise<void> {
  const key = await keyFor(server.url);
  const headers = { authorization: `Bearer ${key}` };
  const create: Job[] = Array.from({ length: conversations }, () => ({ method: "POST", path: "/v1/agents/conversations", body: {} }));
  const ids: string[] = [];
  // Creation, collecting ids (a driver run per batch keeps the ids in order).
  const beforeCreate = await cpuMark(server);
  const created = await driveCollect(server.url, headers, create, concurrency, ids);
  await report(host, "create", created, server, beforeCreate);
  const turnJobs: Job[] = [];
  for (let round = 0; round < turns; round++) for (const id of ids) turnJobs.push({ method: "POST", path: `/v1/agents/conversations/${id}/messages`, body: { content: script } });
  const beforeTurns = await cpuMark(server);
  const turned = await drive(server.url, headers, turnJobs, concurrency);
  await report(host, "turns", turned, server, beforeTurns);
}

/** This tree and the baseline's, embedded, taking turns (the order flips each pair); prints the medians of Troupe's CPU per turn. */
async function runPairs(dir: string): Promise<void> {
  const cpuPerTurn: Record<"current" | "baseline", number[]> = { current: [], baseline: [] };
  for (let pair = 0; pair < pairs; pair++) {
    const order: Array<"current" | "baseline"> = pair % 2 === 0 ? ["current", "baseline"] : ["baseline", "current"];
    for (const which of order) {
      const server = await startEmbedded({}, which === "current" ? repoDir : dir);
      try {
        await run(which, server, concurrency);
      } finally {
        await server.stop();
      }
      const turnsRow = rows.findLast((r) => r.host === which && r.phase === "turns");
      if (turnsRow) cpuPerTurn[which].push(turnsRow.troupeCpuUs);
    }
  }
  const median = (xs: number[]) => summarize(xs).p50;
  const [current, baseline] = [median(cpuPerTurn.current), median(cpuPerTurn.baseline)];
  console.log(`Troupe CPU per turn, median of ${pairs} pairs: current ${fmt(current, 0)} µs, baseline (${dir}) ${fmt(baseline, 0)} µs, ratio ${fmt(current / baseline, 3)}`);
  console.log(`          each: current ${cpuPerTurn.current.map((x) => fmt(x, 0)).join(", ")}; baseline ${cpuPerTurn.baseline.map((x) => fmt(x, 0)).join(", ")}`);
}

/** Like drive(), but keeps each created conversation's id. */
async function driveCollect(origin: string, headers: Record<string, string>, jobs: Job[], conc: number, ids: string[]) {
  const { Pool } = await import("undici");
  const pool = new Pool(origin, { connections: conc });
  const latenciesMs: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: conc }, async () => {
      for (;;) {
        const job = jobs[next++];
        if (!job) return;
        const t0 = performance.now();
        try {
          const res = await pool.request({ method: job.method, path: job.path, headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify(job.body) });
          const json = (await res.body.json()) as { id?: string };
          if (res.statusCode >= 400 || !json.id) {
            errors += 1;
            firstError ??= `${res.statusCode} ${JSON.stringify(json).slice(0, 300)}`;
          } else {
            ids.push(json.id);
            latenciesMs.push(performance.now() - t0);
          }
        } catch (error) {
          errors += 1;
          firstError ??= String(error);
        }
      }
    }),
  );
  await pool.close();
  return { latenciesMs, errors, firstError, seconds: (performance.now() - started) / 1000 };
}

console.log(`agents: ${conversations} conversations × ${turns} turns, ${concurrency} in flight (dapr ${daprConcurrency}), script ${JSON.stringify(script)}`);
if (baselineDir !== undefined) await runPairs(baselineDir);
else for (const host of hosts) {
  const server = host === "dapr" ? await startDapr() : await startEmbedded();
  try {
    await run(host, server, host === "dapr" ? daprConcurrency : concurrency);
  } finally {
    await server.stop();
  }
}
if (idle > 0 && hosts.includes("embedded")) {
  const server = await startEmbedded();
  try {
    const key = await keyFor(server.url);
    const base = await rssMiB(server.pid());
    const jobs: Job[] = Array.from({ length: idle }, () => ({ method: "POST", path: "/v1/agents/conversations", body: {} }));
    const before = await cpuMark(server);
    const r = await drive(server.url, { authorization: `Bearer ${key}` }, jobs, concurrency);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    await report("embedded", "idle", r, server, before);
    console.log(`          ${idle} idle conversations: rss ${fmt(await rssMiB(server.pid()), 0)} MiB (started at ${fmt(base, 0)} MiB; target ≤ 1024 MiB)`);
  } finally {
    await server.stop();
  }
}
let scaled: Awaited<ReturnType<typeof runScale>> | undefined;
if (scale > 0) {
  // On Dapr idle actors also deactivate after a minute here (daprd's idle timeout, at daprd's pace).
  const maxResident = args.get("max-resident");
  const residentEnv: Record<string, string> = maxResident === undefined ? {} : { ACTOR_MAX_RESIDENT: maxResident };
  const server = scaleHost === "dapr" ? await startDapr(scaleReplicas, { ACTOR_IDLE_TIMEOUT_MS: "60000", ...residentEnv }) : await startEmbedded(residentEnv);
  try {
    const key = await keyFor(server.url);
    const where = scaleHost === "dapr" ? `a ${scaleReplicas}-replica Dapr cluster (memory: replica 0)` : "one embedded Troupe";
    console.log(`scale: ${scale} conversations created (${creators} in flight) on ${where} while ${active} of them take turns (${talkers} in flight)`);
    scaled = await runScale({
      url: server.url,
      pid: server.pid(),
      dataDir: server.dataDir,
      key,
      total: scale,
      active,
      creators,
      talkers,
      script,
      sampleSeconds,
      ...(server.redisUrl ? { redisUrl: server.redisUrl } : {}),
    });
    const { end, diskMiB } = scaled;
    console.log(
      `scale  ${scaled.created} conversations, ${scaled.turns} turns on ${Math.min(active, scaled.created)} in ${fmt(scaled.seconds, 0)} s, errors ${scaled.errors}; turn p50 ${fmt(scaled.turnP50Ms)} ms p99 ${fmt(scaled.turnP99Ms)} ms; troupe cpu ${fmt(scaled.troupeCpuUsPerRequest, 0)} µs/request`,
    );
    console.log(
      `scale  end rss ${fmt(end.rssMiB, 0)} MiB (anon ${fmt(end.anonMiB, 0)}, file-backed ${fmt(end.fileMiB, 0)}), peak ${fmt(end.peakMiB, 0)} MiB (target ≤ 1024 MiB)` +
        (scaleHost === "embedded" ? `; on disk ${fmt(diskMiB.total, 0)} MiB (actors ${fmt(diskMiB.actors, 0)}, tenancy ${fmt(diskMiB.tenancy, 0)})` : ""),
    );
    if (scaled.redisBytesPerConversation !== undefined) {
      console.log(`scale  redis used_memory ${fmt(scaled.redisUsedMiB ?? Number.NaN, 0)} MiB at the end: ${fmt(scaled.redisBytesPerConversation, 0)} bytes per conversation created`);
    }
    for (const line of (await server.residency?.()) ?? []) console.log(`scale  ${line}`);
    if (server.cgroup) {
      const { peakMiB, oomKills } = server.cgroup.report();
      console.log(`scale  memory cgroup limit ${memoryLimitMiB} MiB: at most ${fmt(peakMiB, 0)} MiB charged (anonymous + page cache), ${oomKills} OOM kills`);
    }
  } finally {
    await server.stop();
  }
}
console.log("targets (P4, docs/benchmarks.md): embedded ≥ 15,000 turns/s and dapr (1 replica) ≥ 4,000 turns/s, both with p99 ≤ 50 ms; 1,000,000 conversations with 10,000 active ≤ 1 GiB RSS (--scale)");
console.log(JSON.stringify({ bench: "agents", conversations, turns, concurrency, daprConcurrency, script, rows, ...(scaled ? { scale: { ...scaled, samples: undefined } } : {}) }));
