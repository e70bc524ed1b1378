// `npm run bench:gateway`: the gateway's own cost. The same request (a small
// chat-shaped JSON body) against a bare uWS handler and against Troupe's
// authenticated no-op route (API key lookup, scope, rate limit, zod
// validation), in one run: at a fixed rate (open loop) and at saturation
// (wrk, 64 keep-alive connections). Target: Troupe ≥ 60 % of bare uWS
// throughput at saturation.
import { join } from "node:path";
import { startChildServer } from "./lib/child-server.ts";
import { fixedRate, type RequestSpec } from "./lib/loadgen.ts";
import { fmt, summarize } from "../load/stats.ts";
import { requireWrk, wrk } from "./lib/wrk.ts";

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const rate = Number(args.get("rate") ?? 2000);
const seconds = Number(args.get("seconds") ?? 10);
const connections = Number(args.get("connections") ?? 64);
requireWrk();

const body = JSON.stringify({ messages: [{ role: "user", content: "Hello there, how are you today?" }] });
const here = import.meta.dirname;
const children: { stop(): void }[] = [];
const cleanup = (): void => children.forEach((c) => c.stop());
process.on("exit", cleanup);
const bare = await startChildServer(join(here, "servers/bare-uws.ts"));
children.push(bare);
const troupe = await startChildServer(join(here, "servers/troupe-noop.ts"));
children.push(troupe);

async function troupeKey(port: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/v1/auth/signup`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: `bench-${Date.now()}@example.test`, password: "benchmark-password" }),
  });
  const json = (await res.json()) as { environments: { test_key?: { key: string } }[] };
  const key = json.environments[1]?.test_key?.key;
  if (!key) throw new Error("signup returned no test key");
  return key;
}

try {
  const key = await troupeKey(troupe.port);
  const targets: { name: string; port: number; spec: RequestSpec }[] = [
    { name: "bare uWS", port: bare.port, spec: { method: "POST", path: "/noop", headers: { "content-type": "application/json" }, body } },
    {
      name: "Troupe (auth+scope+rate limit+zod)",
      port: troupe.port,
      spec: { method: "POST", path: "/v1/bench/noop", headers: { "content-type": "application/json", authorization: `Bearer ${key}` }, body },
    },
  ];
  // Warm up both (JIT, key cache).
  for (const t of targets) wrk(`http://127.0.0.1:${t.port}${t.spec.path}`, t.spec, 16, 2);

  console.log(`\nfixed rate: ${rate} req/s for ${seconds} s (open loop, latency from scheduled start)`);
  const fixed: Record<string, { p50: number; p99: number }> = {};
  for (const t of targets) {
    const r = fixedRate(`http://127.0.0.1:${t.port}`, t.spec, rate, seconds * 1000);
    const s = summarize(r.latenciesMs);
    fixed[t.name] = s;
    console.log(`  ${t.name.padEnd(36)} ${fmt(r.achievedRps, 0).padStart(7)} req/s  p50 ${fmt(s.p50, 3)} ms  p99 ${fmt(s.p99, 3)} ms  errors ${r.errors}`);
  }

  console.log(`\nsaturation: wrk, ${connections} keep-alive connections, ${seconds} s`);
  const sat: Record<string, number> = {};
  for (const t of targets) {
    const r = wrk(`http://127.0.0.1:${t.port}${t.spec.path}`, t.spec, connections, seconds);
    sat[t.name] = r.rps;
    console.log(`  ${t.name.padEnd(36)} ${fmt(r.rps, 0).padStart(7)} req/s  p50 ${fmt(r.p50Ms, 3)} ms  p99 ${fmt(r.p99Ms, 3)} ms  non-2xx ${r.non2xx}`);
  }
  const names = targets.map((t) => t.name);
  const ratio = (sat[names[1] ?? ""] ?? 0) / (sat[names[0] ?? ""] ?? 1);
  console.log(`\nTroupe / bare uWS throughput at saturation: ${fmt(ratio * 100, 1)} %  (target ≥ 60 %) ${ratio >= 0.6 ? "PASS" : "MISS"}`);
  const added = (fixed[names[1] ?? ""]?.p50 ?? NaN) - (fixed[names[0] ?? ""]?.p50 ?? NaN);
  console.log(`added p50 latency at ${rate} req/s: ${fmt(added, 3)} ms`);
} finally {
  cleanup();
}
