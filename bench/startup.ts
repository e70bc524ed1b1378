// `npm run bench:startup`: embedded cold start. Spawns `node gateway/main.ts`
// --runs times (default 10), each with a fresh TROUPE_DATA_DIR and PORT=0,
// and measures spawn → the first 200 on GET /healthz. Prints every run, p50
// and max. Target (issue 11): ≤ 300 ms.
//
//   node bench/startup.ts [--runs=10] [--main=gateway/main.ts] [--target-ms=300]
// (--main: another checkout's gateway/main.ts, to compare before and after.)
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { fmt, percentile } from "./lib/stats.ts";

const { values: args } = parseArgs({
  options: {
    runs: { type: "string", default: "10" },
    main: { type: "string", default: "gateway/main.ts" },
    "target-ms": { type: "string", default: "300" },
  },
});
const runs = Number(args.runs);
const targetMs = Number(args["target-ms"]);
if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs must be a positive integer, got ${args.runs}`);
const main = resolve(args.main);

/** One GET /healthz; resolves with its status, or 0 when nothing answers yet. */
function healthz(port: number): Promise<number> {
  return new Promise((done) => {
    const req = request({ host: "127.0.0.1", port, path: "/healthz", timeout: 1_000 }, (res) => {
      res.resume();
      res.on("end", () => done(res.statusCode ?? 0));
    });
    req.on("error", () => done(0));
    req.on("timeout", () => req.destroy());
    req.end();
  });
}

/** Milliseconds from spawn to the first 200 on /healthz. */
async function coldStart(): Promise<number> {
  const dataDir = mkdtempSync(join(tmpdir(), "troupe-startup-"));
  // Embedded mode with no optional service: what `npm start` on a fresh machine runs.
  const env: Record<string, string> = {
    PATH: process.env["PATH"] ?? "",
    HOME: process.env["HOME"] ?? "",
    TROUPE_DATA_DIR: dataDir,
    PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
  };
  const startedMs = performance.now();
  const child = spawn(process.execPath, [main], { env, stdio: ["ignore", "pipe", "inherit"] });
  try {
    const port = await new Promise<number>((resolvePort, reject) => {
      let buffer = "";
      const timer = setTimeout(() => reject(new Error("no 'listening on' line in 30 s")), 30_000);
      child.stdout.on("data", (chunk: Buffer) => {
        buffer += chunk.toString();
        const m = /listening on http:\/\/[^:]+:(\d+)/.exec(buffer);
        if (m) {
          clearTimeout(timer);
          resolvePort(Number(m[1]));
        }
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`${main} exited with ${code} before listening`));
      });
    });
    for (;;) {
      if ((await healthz(port)) === 200) return performance.now() - startedMs;
      if (performance.now() - startedMs > 30_000) throw new Error("/healthz did not answer 200 within 30 s");
      await new Promise((r) => setTimeout(r, 2));
    }
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const timesMs: number[] = [];
for (let i = 0; i < runs; i++) {
  const ms = await coldStart();
  timesMs.push(ms);
  process.stdout.write(`run ${i + 1}: ${fmt(ms, 0)} ms\n`);
}
const sorted = [...timesMs].sort((a, b) => a - b);
const p50 = percentile(sorted, 50);
const max = sorted.at(-1) ?? Number.NaN;
process.stdout.write(`cold start (spawn → first 200 on /healthz), ${runs} runs of ${main}: p50 ${fmt(p50, 0)} ms, max ${fmt(max, 0)} ms (target ≤ ${targetMs} ms)\n`);
