// Fixed-rate (open-loop) load from bench/loadgen, a small Go program: it
// sleeps precisely between sends instead of spinning, so on a two-core
// machine the generator does not steal a core from the servers it measures
// (see the comment at the top of bench/loadgen/main.go). Built once per
// source version into the Troupe cache, with the Go standard library only.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { onCpu } from "./cpu-layout.ts";

export interface RequestSpec {
  method: "GET" | "POST";
  path: string;
  headers: Record<string, string>;
  body?: string;
}

export interface FixedRateResult {
  /** Latency of each successful request, from its scheduled start. */
  latenciesMs: number[];
  errors: number;
  firstError: string | undefined;
  sent: number;
  achievedRps: number;
}

export interface FixedRateOptions {
  connections?: number;
  /** End each latency at the first body byte (streaming time to first byte). */
  firstByte?: boolean;
  /** Sent at the same rate before measuring, not recorded (default 1,000 ms). */
  warmupMs?: number;
}

const sourceDir = join(import.meta.dirname, "..", "loadgen");

function cacheRoot(): string {
  const explicit = process.env["TROUPE_CACHE_DIR"];
  if (explicit) return explicit;
  return join(process.env["XDG_CACHE_HOME"] ?? join(homedir(), ".cache"), "troupe");
}

let binary: string | undefined;

/** Path of the built generator, building it if this source version is new. */
function loadgenBinary(): string {
  if (binary) return binary;
  const hash = createHash("sha256");
  for (const file of ["go.mod", "main.go"]) hash.update(readFileSync(join(sourceDir, file)));
  const out = join(cacheRoot(), "loadgen", hash.digest("hex").slice(0, 16), "loadgen");
  if (!existsSync(out)) {
    mkdirSync(dirname(out), { recursive: true });
    const staged = `${out}.${process.pid}`;
    try {
      execFileSync("go", ["build", "-o", staged, "."], { cwd: sourceDir, stdio: ["ignore", "inherit", "inherit"], env: { ...process.env, GOTOOLCHAIN: "local" } });
    } catch (error) {
      throw new Error(`building bench/loadgen needs Go (the same toolchain that builds Dapr): ${String(error)}`);
    }
    renameSync(staged, out);
  }
  binary = out;
  return out;
}

interface LoadgenOutput {
  sent: number;
  ok: number;
  errors: number;
  first_error?: string;
  elapsed_s: number;
  latencies_us: number[];
}

export function fixedRate(origin: string, spec: RequestSpec, ratePerSecond: number, durationMs: number, options: FixedRateOptions = {}): FixedRateResult {
  const args = [
    `-url=${origin}${spec.path}`,
    `-method=${spec.method}`,
    `-rate=${ratePerSecond}`,
    `-duration=${durationMs}ms`,
    `-connections=${options.connections ?? 64}`,
    `-warmup=${options.warmupMs ?? 1000}ms`,
    ...Object.entries(spec.headers).map(([name, value]) => `-header=${name}: ${value}`),
  ];
  if (spec.body !== undefined) args.push(`-body=${spec.body}`);
  if (options.firstByte) args.push("-ttfb");
  const [command, commandArgs] = onCpu("world", loadgenBinary(), args);
  const out = JSON.parse(execFileSync(command, commandArgs, { encoding: "utf8", maxBuffer: 256 * 1024 * 1024 })) as LoadgenOutput;
  return {
    latenciesMs: out.latencies_us.map((us) => us / 1000),
    errors: out.errors,
    firstError: out.first_error,
    sent: out.sent,
    achievedRps: out.ok / out.elapsed_s,
  };
}
