// `npm run bench:load-vs-autocannon`: troupe-load against two reference
// generators on the same target, body and rate — autocannon (Node, its -R
// rate limit, latency from each send) and bench/loadgen (Go, open loop,
// latency from each scheduled start) — one after the other against one
// embedded Troupe (chat, simulated model). They should agree on throughput
// and latency within noise; the table is what docs/load-driver.md quotes.
// autocannon's -R is a per-connection quota per second (each connection
// sends back to back until its share of the second is used, then waits), so
// its fixed-rate traffic comes in bursts and its latency counts each burst's
// queue; the closed-loop round (--closed=8: troupe-load --concurrency 8
// against autocannon -c 8, no rate) compares the two like for like.
//
// Flags: --rate=500 --duration=10 --connections=32 --rounds=1 (each round
//        runs the three in turn) --no-go (skip bench/loadgen) --closed=8
//        (0 skips the closed-loop round)
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { freePort, waitFor } from "../test/support/net.ts";
import { reportSchema } from "../load/report.ts";
import { liveKeyFor } from "./lib/bench-account.ts";
import { fixedRate } from "./lib/loadgen.ts";
import { fmt, summarize } from "../load/stats.ts";

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split(/=(.*)/s).slice(0, 2) as [string, string]));
const rate = Number(args.get("rate") ?? 500);
const duration = Number(args.get("duration") ?? 10);
const connections = Number(args.get("connections") ?? 32);
const rounds = Number(args.get("rounds") ?? 1);
const withGo = !args.has("no-go");
const closed = Number(args.get("closed") ?? 8);
const repo = join(import.meta.dirname, "..");

const port = await freePort();
const troupe = spawn(process.execPath, [join(repo, "gateway/main.ts")], {
  env: { ...process.env, LOG_LEVEL: "warn", DEFAULT_RATE_LIMIT_PER_MINUTE: "10000000", PORT: String(port), HOST: "127.0.0.1", TROUPE_DATA_DIR: mkdtempSync(join(tmpdir(), "troupe-bench-load-")) },
  stdio: "ignore",
});
const url = `http://127.0.0.1:${port}`;
await waitFor(async () => (await fetch(`${url}/readyz`)).ok, 30_000, "embedded troupe");
const key = await (await liveKeyFor(url)).project(undefined);
const body = JSON.stringify({ model: "simulated-chat", messages: [{ role: "user", content: "Say hello to the load test" }] });

interface Row {
  tool: string;
  ok: number;
  errors: number;
  rps: number;
  p50: number;
  p99: number;
}
const rows: Row[] = [];

function troupeLoad(concurrency?: number): Row {
  const out = join(mkdtempSync(join(tmpdir(), "troupe-load-")), "r.json");
  const load = concurrency ? ["--concurrency", String(concurrency)] : ["--rate", String(rate)];
  execFileSync(process.execPath, [join(repo, "load/cli.ts"), "--url", url, "--key", key, ...load, "--duration", String(duration), "--connections", String(connections), "--json", out, "--quiet"], { stdio: "ignore" });
  const r = reportSchema.parse(JSON.parse(readFileSync(out, "utf8")));
  return { tool: concurrency ? `troupe-load -c ${concurrency}` : "troupe-load", ok: r.ok, errors: r.errors, rps: r.throughput_rps, p50: r.latency_ms.all.p50 ?? NaN, p99: r.latency_ms.all.p99 ?? NaN };
}

const autocannonOutput = z.object({ requests: z.object({ average: z.number() }), latency: z.object({ p50: z.number(), p99: z.number() }), non2xx: z.number(), errors: z.number(), "2xx": z.number() });

function autocannon(concurrency?: number): Row {
  const load = concurrency ? ["-c", String(concurrency)] : ["-R", String(rate), "-c", String(connections)];
  const bin = join(repo, "node_modules/.bin/autocannon");
  const out = execFileSync(bin, ["--json", "-m", "POST", "-H", `authorization=Bearer ${key}`, "-H", "content-type=application/json", "-b", body, ...load, "-d", String(duration), `${url}/v1/chat/completions`], { encoding: "utf8", maxBuffer: 64 * 1024 * 1024, stdio: ["ignore", "pipe", "ignore"] });
  const r = autocannonOutput.parse(JSON.parse(out));
  // autocannon's latency percentiles are whole milliseconds (its histogram's unit).
  return { tool: concurrency ? `autocannon -c ${concurrency}` : "autocannon", ok: r["2xx"], errors: r.non2xx + r.errors, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99 };
}

function goLoadgen(): Row {
  const r = fixedRate(url, { method: "POST", path: "/v1/chat/completions", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body }, rate, duration * 1000, { connections, warmupMs: 0 });
  const s = summarize(r.latenciesMs);
  return { tool: "bench/loadgen (Go)", ok: s.count, errors: r.errors, rps: r.achievedRps, p50: s.p50, p99: s.p99 };
}

try {
  console.log(`chat (simulated-chat) at ${rate}/s for ${duration} s, ${connections} connections, against ${url}`);
  for (let round = 0; round < rounds; round++) {
    const runs: (() => Row)[] = [() => troupeLoad(), () => autocannon(), ...(withGo ? [goLoadgen] : []), ...(closed > 0 ? [() => troupeLoad(closed), () => autocannon(closed)] : [])];
    for (const run of runs) {
      const row = run();
      rows.push(row);
      console.log(`${row.tool.padEnd(22)} ok ${String(row.ok).padStart(6)}  errors ${row.errors}  ${fmt(row.rps, 1).padStart(7)} req/s  p50 ${fmt(row.p50)} ms  p99 ${fmt(row.p99)} ms`);
    }
  }
  console.log(JSON.stringify({ bench: "load-vs-autocannon", rate, duration, connections, closed, rows }));
} finally {
  troupe.kill("SIGTERM");
}
