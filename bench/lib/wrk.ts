// Saturation load with wrk (Debian's `wrk`, a C load generator, so the
// generator is not the bottleneck on two cores). Parses req/s and latency.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { onCpu } from "./cpu-layout.ts";
import type { RequestSpec } from "./loadgen.ts";

export interface WrkResult {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
}

export function requireWrk(): void {
  if (spawnSync("sh", ["-c", "command -v wrk"]).status !== 0) {
    throw new Error("this benchmark needs wrk for saturation load: apt-get install -y wrk");
  }
}

function toMs(value: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(value.trim());
  if (!m) return NaN;
  const n = Number(m[1]);
  return m[2] === "us" ? n / 1000 : m[2] === "ms" ? n : m[2] === "s" ? n * 1000 : n * 60_000;
}

export function wrk(url: string, spec: RequestSpec, connections: number, durationS: number, threads = 1): WrkResult {
  const dir = mkdtempSync(join(tmpdir(), "troupe-wrk-"));
  const script = join(dir, "request.lua");
  const lines = [`wrk.method = ${JSON.stringify(spec.method)}`];
  if (spec.body) lines.push(`wrk.body = ${JSON.stringify(spec.body)}`);
  for (const [k, v] of Object.entries(spec.headers)) lines.push(`wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`);
  writeFileSync(script, lines.join("\n") + "\n");
  const [command, args] = onCpu("world", "wrk", [`-t${threads}`, `-c${connections}`, `-d${durationS}s`, "--latency", "-s", script, url]);
  const out = execFileSync(command, args, { encoding: "utf8" });
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN);
  const p50 = /\s50%\s+(\S+)/.exec(out)?.[1] ?? "";
  const p99 = /\s99%\s+(\S+)/.exec(out)?.[1] ?? "";
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
  return { rps, p50Ms: toMs(p50), p99Ms: toMs(p99), non2xx };
}
