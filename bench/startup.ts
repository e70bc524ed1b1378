// `npm run bench:startup`: embedded cold start of what `npm start` runs (the
// bundle .dist/main.mjs, built first by scripts/build-dist.ts). Spawns it
// --runs times (default 10), each with a fresh TROUPE_DATA_DIR and PORT=0,
// and measures spawn → the first 200 on GET /healthz. Prints every run, p50
// and max. Target: ≤ 300 ms. Also prints the CPU time the process
// used until then (/proc/<pid>/stat, 10 ms ticks), which a busy machine
// inflates far less than wall time.
//
//   node bench/startup.ts [--runs=10] [--main=.dist/main.mjs[,gateway/main.ts]] [--target-ms=300]
// (--main: several entry points, e.g. another checkout's, are run in turns
// so that both see the same machine load.)
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { fmt, percentile } from "../load/stats.ts";

const { values: args } = parseArgs({
  options: {
    runs: { type: "string", default: "10" },
    main: { type: "string", default: ".dist/main.mjs" },
    "target-ms": { type: "string", default: "300" },
  },
});
const runs = Number(args.runs);
const targetMs = Number(args["target-ms"]);
if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs must be a positive integer, got ${args.runs}`);
const mains = args.main.split(",").map((m) => resolve(m.trim()));
// The bundle is a build cache: bring it up to date (a no-op when it is) before timing it.
execFileSync(process.execPath, [resolve(import.meta.dirname, "../scripts/build-dist.ts")], { stdio: "inherit" });

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

/** CPU milliseconds (user + system) the process has used, from /proc (Linux). */
function cpuMs(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the ")" closing the command name: utime is the 12th, stime the 13th.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

/** Milliseconds from spawn to the first 200 on /healthz, and the CPU time used by then. */
async function coldStart(main: string): Promise<{ wallMs: number; cpuMs: number }> {
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
      if ((await healthz(port)) === 200) return { wallMs: performance.now() - startedMs, cpuMs: cpuMs(child.pid) };
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

const results = new Map<string, Array<{ wallMs: number; cpuMs: number }>>(mains.map((m) => [m, []]));
for (let i = 0; i < runs; i++) {
  for (const main of mains) {
    const run = await coldStart(main);
    results.get(main)?.push(run);
    process.stdout.write(`run ${i + 1} ${main}: ${fmt(run.wallMs, 0)} ms (CPU ${fmt(run.cpuMs, 0)} ms)\n`);
  }
}
for (const [main, runsOfMain] of results) {
  const wall = runsOfMain.map((r) => r.wallMs).sort((a, b) => a - b);
  const cpu = runsOfMain.map((r) => r.cpuMs).sort((a, b) => a - b);
  process.stdout.write(
    `cold start (spawn → first 200 on /healthz), ${runs} runs of ${main}: p50 ${fmt(percentile(wall, 50), 0)} ms, max ${fmt(wall.at(-1) ?? Number.NaN, 0)} ms ` +
      `(target ≤ ${targetMs} ms); CPU p50 ${fmt(percentile(cpu, 50), 0)} ms, max ${fmt(cpu.at(-1) ?? Number.NaN, 0)} ms\n`,
  );
}
