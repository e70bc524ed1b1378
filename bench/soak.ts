// `npm run soak`: does Troupe stay the same size under endless load? It
// starts bench/chat.ts's fake OpenAI upstream and a Troupe routing chat to
// it (embedded by default, `--redis` on a fresh redis-server), makes a live
// key, and drives POST /v1/chat/completions at saturation with wrk for
// `--minutes` (default 10). Every `--sample-seconds` (default 2: several
// samples per generation of the ledger's records, never in step with it) it prints
// Troupe's RSS, the size of its data directory (blocks in use) and, with
// --redis, Redis's used_memory. After the warm-up it checks each series is
// flat: the mean of the second half of the samples within 10 % of the mean
// of the first half (means, because the ledger deletes a generation of
// per-call records at a time, a saw tooth by design that single samples
// catch at any height; growth raises the mean), or within 1 MB (a data
// directory of a few hundred KiB, the usage journal's segments on Redis,
// moves by more than 10 % from one sample to the next). Exits 1 when one is
// not, or when wrk saw errors.
//
// Per-call ledger records are kept `--retention-seconds` (default 20, so a
// steady state shows within minutes; the product's default is 7 days), and
// the warm-up (default: the larger of 4 retention windows and a third of
// the run) covers their first deletions.
//
//   node bench/soak.ts [--minutes=10] [--redis] [--retention-seconds=20] [--connections=16]
//                      [--sample-seconds=2] [--warmup-seconds=N] [--root=<checkout>]
// (--root: run the upstream and Troupe of another checkout's bench/chat.ts,
//  e.g. the main branch before a change, under the same load and sampling.)
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, lstatSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Redis } from "ioredis";
import { startChildServer, type ChildServer } from "./lib/child-server.ts";
import { requireWrk } from "./lib/wrk.ts";

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string | undefined]));
const minutes = Number(args.get("minutes") ?? 10);
const retentionSeconds = Number(args.get("retention-seconds") ?? 20);
const connections = Number(args.get("connections") ?? 16);
const sampleSeconds = Number(args.get("sample-seconds") ?? 2);
const totalSeconds = Math.round(minutes * 60);
const warmupSeconds = Number(args.get("warmup-seconds") ?? Math.max(4 * retentionSeconds, Math.round(totalSeconds / 3)));
const root = resolve(args.get("root") ?? join(import.meta.dirname, ".."));
const useRedis = args.has("redis");
const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

/** Blocks in use under `dir` (sparse files count what they hold, not their length). */
function diskBytes(dir: string): number {
  let total = 0;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    try {
      const stat = lstatSync(path);
      total += stat.isDirectory() ? diskBytes(path) : stat.blocks * 512;
    } catch {
      // Deleted between the listing and the stat (a journal segment): it holds nothing now.
    }
  }
  return total;
}

function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(m?.[1] ?? NaN) * 1024;
}

async function post(url: string, token: string | undefined, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) });
  if (res.status >= 300) throw new Error(`POST ${url}: ${res.status} ${await res.text()}`);
  return (await res.json()) as Record<string, unknown>;
}

/** A signup, a project and a live key of its production environment; the session reads the usage report at the end. */
async function liveKey(base: string): Promise<{ key: string; session: string; projectId: string }> {
  const signup = await post(`${base}/v1/auth/signup`, undefined, { email: `soak-${Date.now()}@example.test`, password: "soak-test-password" });
  const session = String(signup["session_token"]);
  const orgId = String((signup["organization"] as { id: string }).id);
  const created = await post(`${base}/v1/orgs/${orgId}/projects`, session, { name: "soak" });
  const projectId = (created["project"] as { id: string }).id;
  const envId = (created["environments"] as { environment: { id: string } }[])[0]?.environment.id ?? "";
  const key = String((await post(`${base}/v1/environments/${envId}/api-keys`, session, { name: "soak", live: true }))["key"]);
  return { key, session, projectId };
}

async function startRedis(): Promise<{ url: string; process: ChildProcess }> {
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const dir = mkdtempSync(join(tmpdir(), "troupe-soak-redis-"));
  const child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir], { stdio: "ignore" });
  for (let i = 0; i < 100; i++) {
    if (spawnSync("redis-cli", ["-p", String(port), "ping"], { encoding: "utf8" }).stdout.trim() === "PONG") return { url: `redis://127.0.0.1:${port}`, process: child };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`redis-server on port ${port} did not start`);
}

interface Sample {
  t: number;
  rss: number;
  data: number;
  redis: number | undefined;
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;

/** Flat: the mean of the second half within 10 % (or 1 MB) of the first half's. */
function flat(values: number[]): { ok: boolean; first: number; second: number; min: number; max: number } {
  const half = Math.floor(values.length / 2);
  const first = mean(values.slice(0, half));
  const second = mean(values.slice(half));
  return { ok: second <= first * 1.1 || second - first < 1024 * 1024, first, second, min: Math.min(...values), max: Math.max(...values) };
}

async function main(): Promise<number> {
  requireWrk();
  const children: Array<ChildServer | { process: ChildProcess }> = [];
  const stopAll = () => {
    for (const child of children) child.process.kill("SIGKILL");
  };
  process.on("exit", stopAll);
  const chat = join(root, "bench", "chat.ts");
  const upstream = await startChildServer(chat, { BENCH_CHAT_ROLE: "upstream" }, "world");
  children.push(upstream);
  const redis = useRedis ? await startRedis() : undefined;
  if (redis) children.push(redis);
  // Troupe's data directory is the one mkdtemp makes under its TMPDIR: this one.
  const tmp = mkdtempSync(join(tmpdir(), "troupe-soak-"));
  const troupe = await startChildServer(chat, {
    BENCH_CHAT_ROLE: "troupe",
    BENCH_UPSTREAM: `http://127.0.0.1:${upstream.port}`,
    BENCH_RETENTION_SECONDS: String(retentionSeconds),
    TMPDIR: tmp,
    ...(redis ? { BENCH_REDIS_URL: redis.url } : {}),
  });
  children.push(troupe);
  const pid = troupe.process.pid ?? 0;
  const dataDir = join(tmp, readdirSync(tmp).find((n) => n.startsWith("troupe-bench-chat-")) ?? "");
  const base = `http://127.0.0.1:${troupe.port}`;
  const { key, session, projectId } = await liveKey(base);
  const redisClient = redis ? new Redis(redis.url) : undefined;

  console.log(`soak: ${root === resolve(import.meta.dirname, "..") ? "this checkout" : root}, ${redis ? "Redis data store" : "embedded"}, ${minutes} min at saturation (wrk, ${connections} connections, one live key, chat on a fake upstream)`);
  console.log(`per-call record retention ${retentionSeconds} s; warm-up ${warmupSeconds} s; a sample every ${sampleSeconds} s`);
  const script = join(tmp, "request.lua");
  const body = JSON.stringify({ model: "gpt-4.1-mini", routing_strategy: "manual", messages: [{ role: "user", content: "Hello, how are you?" }] });
  writeFileSync(script, [`wrk.method = "POST"`, `wrk.body = ${JSON.stringify(body)}`, `wrk.headers["content-type"] = "application/json"`, `wrk.headers["authorization"] = "Bearer ${key}"`].join("\n") + "\n");
  const wrk = spawn("wrk", ["-t1", `-c${connections}`, `-d${totalSeconds}s`, "--latency", "-s", script, `${base}/v1/chat/completions`], { stdio: ["ignore", "pipe", "inherit"] });
  let wrkOut = "";
  wrk.stdout.on("data", (chunk: Buffer) => (wrkOut += chunk.toString()));
  const wrkDone = new Promise<void>((done) => wrk.once("exit", () => done()));

  const samples: Sample[] = [];
  const started = Date.now();
  // The calls billed so far (the usage report's counters): the rate per sample, since what 1–1.5
  // retention windows of records hold follows the rate, which other work on the machine moves.
  const billedSoFar = async () => {
    const report = (await (await fetch(`${base}/v1/projects/${projectId}/usage`, { headers: { authorization: `Bearer ${session}` } })).json()) as { live?: { calls?: number } };
    return report.live?.calls ?? 0;
  };
  let lastBilled = 0;
  let lastAt = Date.now();
  console.log("     t      RSS (MB)   data dir (MB)" + (redis ? "   Redis used_memory (MB)" : "") + "   billed/s");
  let finished = false;
  void wrkDone.then(() => (finished = true));
  while (!finished) {
    await Promise.race([new Promise((r) => setTimeout(r, sampleSeconds * 1000)), wrkDone]);
    if (finished) break;
    const t = Math.round((Date.now() - started) / 1000);
    const usedMemory = redisClient ? Number(/used_memory:(\d+)/.exec(await redisClient.info("memory"))?.[1] ?? NaN) : undefined;
    const sample: Sample = { t, rss: rssBytes(pid), data: diskBytes(dataDir), redis: usedMemory };
    samples.push(sample);
    const billedNow = await billedSoFar();
    const rate = ((billedNow - lastBilled) * 1000) / Math.max(1, Date.now() - lastAt);
    [lastBilled, lastAt] = [billedNow, Date.now()];
    console.log(
      `${String(t).padStart(5)} s  ${mb(sample.rss).padStart(10)}  ${mb(sample.data).padStart(14)}` +
        (usedMemory === undefined ? "" : `  ${mb(usedMemory).padStart(22)}`) +
        `  ${rate.toFixed(0).padStart(9)}` +
        (t <= warmupSeconds ? "   (warm-up)" : ""),
    );
  }
  await redisClient?.quit();
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(wrkOut)?.[1] ?? NaN);
  const requests = Number(/(\d+) requests in/.exec(wrkOut)?.[1] ?? NaN);
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(wrkOut)?.[1] ?? 0);
  const socketErrors = /Socket errors:.*/.exec(wrkOut)?.[0];
  console.log(`load: ${requests} requests, ${rps.toFixed(0)} req/s, ${non2xx} non-2xx${socketErrors ? `; ${socketErrors}` : ""}`);
  // Every answered call billed: the usage report (from the ledger's counters) once the last flush is in.
  let billed = 0;
  for (let i = 0; i < 20 && billed < requests; i++) {
    await new Promise((r) => setTimeout(r, 500));
    billed = await billedSoFar();
  }
  console.log(`ledger: ${billed} calls billed for ${requests} answered (wrk counts only answers it read before stopping)`);

  const steady = samples.filter((s) => s.t > warmupSeconds);
  if (steady.length < 4) {
    console.log(`FAIL: only ${steady.length} samples after the warm-up: run longer (--minutes) or sample more often`);
    return 1;
  }
  const series: Array<[string, number[]]> = [
    ["RSS", steady.map((s) => s.rss)],
    ["data dir", steady.map((s) => s.data)],
  ];
  if (redis) series.push(["Redis used_memory", steady.map((s) => s.redis ?? NaN)]);
  let ok = non2xx === 0 && Number.isFinite(rps) && billed >= requests;
  if (billed < requests) console.log("FAIL: fewer calls billed than answered");
  for (const [name, values] of series) {
    const result = flat(values);
    ok &&= result.ok;
    const change = (((result.second - result.first) / result.first) * 100).toFixed(1);
    console.log(`${result.ok ? "flat" : "GROWING"}: ${name} mean ${mb(result.first)} MB in the first half after warm-up, ${mb(result.second)} MB in the second (${change} %, limit +10 % or 1 MB; ${mb(result.min)}–${mb(result.max)} MB)`);
  }
  if (non2xx > 0) console.log("FAIL: wrk saw non-2xx answers");
  return ok ? 0 : 1;
}

process.exitCode = await main();
process.exit();
