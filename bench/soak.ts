// `npm run soak`: does Troupe stay the same size under endless load? It
// starts bench/chat.ts's fake OpenAI upstream and a Troupe routing chat to
// it (embedded by default, `--redis` on a fresh redis-server, `--cluster` on
// a fresh 3-primary Redis Cluster or `--cluster=host:port,…` on a running
// one), makes a live key, and drives POST /v1/chat/completions at saturation
// with wrk for `--minutes` (default 10). Every `--sample-seconds` (default 2)
// it prints Troupe's RSS, the size of its data directory (blocks in use),
// Redis's used_memory (summed over a cluster's primaries), the per-call
// ledger entries held, the calls billed per second since the last sample,
// and the entries held as a multiple of the last retention window's calls.
//
// After the warm-up it checks each series is flat: the mean of the second
// half of the samples within 10 % of the mean of the first half (means: the
// ledger deletes a generation of entries at a time, a small saw tooth by
// design), or within 1 MB (a data directory of a few hundred KiB moves by
// more than 10 % from one sample to the next). The entries held are those
// of the last retention window's calls and at most 1/G more (G generations
// per window, tenancy/ledger-entry.ts), so Redis memory follows the call
// rate, which other work on a shared machine moves: when used_memory is not
// flat but its bytes per held entry (above the memory before the load) are,
// and the entries stayed within that bound, the verdict says the rate moved
// it, not growth. Exits 1 when a series grows, the entries exceed the bound,
// fewer calls are billed than answered, or wrk saw errors.
//
// Per-call ledger records are kept `--retention-seconds` (default 20, so a
// steady state shows within minutes; the product's default is 7 days), and
// the warm-up (default: the larger of 4 retention windows and a third of
// the run) covers their first deletions.
//
//   node bench/soak.ts [--minutes=10] [--redis | --cluster[=host:port,…]] [--retention-seconds=20]
//                      [--connections=16] [--sample-seconds=2] [--warmup-seconds=N] [--root=<checkout>]
//                      [--generations=G]
// (--root: run the upstream and Troupe of another checkout's bench/chat.ts,
//  e.g. the main branch before a change, under the same load and sampling;
//  --generations: that checkout's generations per window, for the bound.)
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, lstatSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { generationsPerWindow } from "../tenancy/ledger-entry.ts";
import { startChildServer, type ChildServer } from "./lib/child-server.ts";
import { clusterRedis, embedded, ownRedis, type SoakStore } from "./lib/soak-stores.ts";
import { requireWrk } from "./lib/wrk.ts";

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string | undefined]));
const minutes = Number(args.get("minutes") ?? 10);
const retentionSeconds = Number(args.get("retention-seconds") ?? 20);
const connections = Number(args.get("connections") ?? 16);
const sampleSeconds = Number(args.get("sample-seconds") ?? 2);
const totalSeconds = Math.round(minutes * 60);
const warmupSeconds = Number(args.get("warmup-seconds") ?? Math.max(4 * retentionSeconds, Math.round(totalSeconds / 3)));
const root = resolve(args.get("root") ?? join(import.meta.dirname, ".."));
const generations = Number(args.get("generations") ?? generationsPerWindow);
const mode = args.has("cluster") ? "cluster" : args.has("redis") ? "redis" : "embedded";
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

interface Sample {
  t: number;
  rss: number;
  data: number;
  redis: number | undefined;
  held: number;
  /** Calls billed so far (the usage report's counters), read with the sample. */
  billed: number;
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;

/** Flat: the mean of the second half within 10 % (or `slack`) of the first half's. */
function flat(values: number[], slack = 1024 * 1024): { ok: boolean; first: number; second: number; min: number; max: number } {
  const half = Math.floor(values.length / 2);
  const first = mean(values.slice(0, half));
  const second = mean(values.slice(half));
  return { ok: second <= first * 1.1 || second - first < slack, first, second, min: Math.min(...values), max: Math.max(...values) };
}

/** Calls billed by time `t` (seconds since the load began), interpolated between samples. */
function billedAt(history: Array<{ t: number; billed: number }>, t: number): number {
  if (history.length === 0 || t <= (history[0]?.t ?? 0)) return 0;
  for (let i = 1; i < history.length; i++) {
    const [a, b] = [history[i - 1], history[i]];
    if (a && b && t <= b.t) return a.billed + ((b.billed - a.billed) * (t - a.t)) / Math.max(1e-9, b.t - a.t);
  }
  return history[history.length - 1]?.billed ?? 0;
}

async function main(): Promise<number> {
  requireWrk();
  const children: ChildServer[] = [];
  let store: SoakStore | undefined;
  process.on("exit", () => {
    for (const child of children) child.process.kill("SIGKILL");
  });
  const chat = join(root, "bench", "chat.ts");
  const upstream = await startChildServer(chat, { BENCH_CHAT_ROLE: "upstream" }, "world");
  children.push(upstream);
  // Troupe's data directory is the one mkdtemp makes under its TMPDIR: this one.
  const tmp = mkdtempSync(join(tmpdir(), "troupe-soak-"));
  const dataDir = () => join(tmp, readdirSync(tmp).find((n) => n.startsWith("troupe-bench-chat-")) ?? "");
  const clusterNodes = args.get("cluster")?.split(",").filter(Boolean);
  store = mode === "cluster" ? await clusterRedis(root, clusterNodes) : mode === "redis" ? await ownRedis() : embedded(dataDir);
  try {
    const troupe = await startChildServer(chat, {
      BENCH_CHAT_ROLE: "troupe",
      BENCH_UPSTREAM: `http://127.0.0.1:${upstream.port}`,
      BENCH_RETENTION_SECONDS: String(retentionSeconds),
      TMPDIR: tmp,
      ...store.env,
    });
    children.push(troupe);
    return await soak(troupe, store, dataDir(), tmp);
  } finally {
    for (const child of children.splice(0)) child.process.kill("SIGKILL");
    await store.stop();
  }
}

async function soak(troupe: ChildServer, store: SoakStore, dataDir: string, tmp: string): Promise<number> {
  const pid = troupe.process.pid ?? 0;
  const base = `http://127.0.0.1:${troupe.port}`;
  const { key, session, projectId } = await liveKey(base);
  const where = { embedded: "embedded", redis: "one Redis (its own)", cluster: `a 3-primary Redis Cluster (${args.get("cluster") ? "running: used_memory includes what else it holds" : "its own"})` }[mode];
  console.log(`soak: ${root === resolve(import.meta.dirname, "..") ? "this checkout" : root}, ${where}, ${minutes} min at saturation (wrk, ${connections} connections, one live key, chat on a fake upstream)`);
  console.log(`per-call record retention ${retentionSeconds} s in generations of ${(retentionSeconds / generations).toFixed(1)} s (${generations} per window: ${retentionSeconds}–${(retentionSeconds * (1 + 1 / generations)).toFixed(1)} s of calls held); warm-up ${warmupSeconds} s; a sample every ${sampleSeconds} s`);
  const baseline = await store.usedMemory();
  if (baseline !== undefined) console.log(`Redis used_memory before the load: ${mb(baseline)} MB`);
  const script = join(tmp, "request.lua");
  const body = JSON.stringify({ model: "gpt-4.1-mini", routing_strategy: "manual", messages: [{ role: "user", content: "Hello, how are you?" }] });
  writeFileSync(script, [`wrk.method = "POST"`, `wrk.body = ${JSON.stringify(body)}`, `wrk.headers["content-type"] = "application/json"`, `wrk.headers["authorization"] = "Bearer ${key}"`].join("\n") + "\n");
  const wrk = spawn("wrk", ["-t1", `-c${connections}`, `-d${totalSeconds}s`, "--latency", "-s", script, `${base}/v1/chat/completions`], { stdio: ["ignore", "pipe", "inherit"] });
  let wrkOut = "";
  wrk.stdout.on("data", (chunk: Buffer) => (wrkOut += chunk.toString()));
  const wrkDone = new Promise<void>((done) => wrk.once("exit", () => done()));

  const samples: Sample[] = [];
  const started = Date.now();
  const billedSoFar = async () => {
    const report = (await (await fetch(`${base}/v1/projects/${projectId}/usage`, { headers: { authorization: `Bearer ${session}` } })).json()) as { live?: { calls?: number } };
    return report.live?.calls ?? 0;
  };
  const history: Array<{ t: number; billed: number }> = [{ t: 0, billed: 0 }];
  console.log("     t   RSS (MB)  data dir (MB)" + (baseline !== undefined ? "  Redis used_memory (MB)" : "") + "  entries held  billed/s  held ÷ last window's calls");
  let finished = false;
  void wrkDone.then(() => (finished = true));
  while (!finished) {
    await Promise.race([new Promise((r) => setTimeout(r, sampleSeconds * 1000)), wrkDone]);
    if (finished) break;
    const usedMemory = await store.usedMemory();
    const held = await store.heldEntries();
    const billed = await billedSoFar();
    const t = (Date.now() - started) / 1000;
    const sample: Sample = { t, rss: rssBytes(pid), data: diskBytes(dataDir), redis: usedMemory, held, billed };
    const last = history[history.length - 1] ?? { t: 0, billed: 0 };
    history.push({ t, billed });
    samples.push(sample);
    const rate = (billed - last.billed) / Math.max(1e-3, t - last.t);
    const window = billed - billedAt(history, t - retentionSeconds);
    console.log(
      `${t.toFixed(0).padStart(6)} s  ${mb(sample.rss).padStart(8)}  ${mb(sample.data).padStart(13)}` +
        (usedMemory === undefined ? "" : `  ${mb(usedMemory).padStart(22)}`) +
        `  ${String(held).padStart(12)}  ${rate.toFixed(0).padStart(8)}  ${t > retentionSeconds ? (held / Math.max(1, window)).toFixed(2).padStart(26) : "".padStart(26)}` +
        (t <= warmupSeconds ? "   (warm-up)" : ""),
    );
  }
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
  return verdict(samples, history, baseline, { non2xx, rps, billed, requests });
}

function verdict(samples: Sample[], history: Array<{ t: number; billed: number }>, baseline: number | undefined, load: { non2xx: number; rps: number; billed: number; requests: number }): number {
  const steady = samples.filter((s) => s.t > warmupSeconds);
  if (steady.length < 4) {
    console.log(`FAIL: only ${steady.length} samples after the warm-up: run longer (--minutes) or sample more often`);
    return 1;
  }
  let ok = load.non2xx === 0 && Number.isFinite(load.rps) && load.billed >= load.requests;
  if (load.billed < load.requests) console.log("FAIL: fewer calls billed than answered");
  if (load.non2xx > 0) console.log("FAIL: wrk saw non-2xx answers");
  const half = Math.floor(steady.length / 2);
  const rates = [steady.slice(0, half), steady.slice(half)].map((part) => {
    const [a, b] = [part[0], part[part.length - 1]];
    return a && b ? (b.billed - a.billed) / Math.max(1e-3, b.t - a.t) : NaN;
  });
  console.log(`billed rate after warm-up: ${rates[0]?.toFixed(0)} calls/s in the first half, ${rates[1]?.toFixed(0)} in the second`);

  // The retention bound: the entries held never more than the calls of the last (1 + 1/G) windows (one sample's slack).
  const span = retentionSeconds * (1 + 1 / generations) + sampleSeconds;
  const over = steady.filter((s) => s.held > s.billed - billedAt(history, s.t - span));
  const ratios = steady.map((s) => s.held / Math.max(1, s.billed - billedAt(history, s.t - retentionSeconds)));
  console.log(
    `${over.length === 0 ? "bounded" : "UNBOUNDED"}: entries held ${Math.min(...steady.map((s) => s.held))}–${Math.max(...steady.map((s) => s.held))}, ` +
      `${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)} × the last window's calls (bound 1 + 1/${generations} = ${(1 + 1 / generations).toFixed(2)}); ` +
      `${over.length} samples above the calls of the last ${span.toFixed(0)} s`,
  );
  ok &&= over.length === 0;

  const series: Array<[string, number[]]> = [
    ["RSS", steady.map((s) => s.rss)],
    ["data dir", steady.map((s) => s.data)],
  ];
  for (const [name, values] of series) {
    const result = flat(values);
    ok &&= result.ok;
    console.log(`${result.ok ? "flat" : "GROWING"}: ${name} ${describe(result)}`);
  }
  if (baseline !== undefined) {
    const memory = flat(steady.map((s) => s.redis ?? NaN));
    // What memory holds per entry held, above what Redis held before the load: flat unless something other than entries grows.
    const perEntry = flat(
      steady.map((s) => ((s.redis ?? NaN) - baseline) / Math.max(1, s.held)),
      0,
    );
    const perEntryLine = `Redis bytes per held entry (above the ${mb(baseline)} MB before the load) ${perEntry.first.toFixed(0)} in the first half, ${perEntry.second.toFixed(0)} in the second (${pct(perEntry)}, ${perEntry.min.toFixed(0)}–${perEntry.max.toFixed(0)})`;
    if (memory.ok) console.log(`flat: Redis used_memory ${describe(memory)}; ${perEntryLine}`);
    else if (perEntry.ok && over.length === 0) console.log(`flat per held entry (the rate moved it, within the retention bound): Redis used_memory ${describe(memory)}; ${perEntryLine}`);
    else console.log(`GROWING: Redis used_memory ${describe(memory)}; ${perEntryLine}`);
    ok &&= memory.ok || perEntry.ok;
  }
  return ok ? 0 : 1;
}

const pct = (r: { first: number; second: number }) => `${r.second >= r.first ? "+" : ""}${(((r.second - r.first) / r.first) * 100).toFixed(1)} %`;

function describe(r: { first: number; second: number; min: number; max: number }): string {
  return `mean ${mb(r.first)} MB in the first half after warm-up, ${mb(r.second)} MB in the second (${pct(r)}, limit +10 % or 1 MB; ${mb(r.min)}–${mb(r.max)} MB)`;
}

process.exitCode = await main();
process.exit();
