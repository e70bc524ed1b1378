// `npm run bench:jobs`: many concurrent video jobs through the real gateway
// (embedded host, child process): each job is a JobActor driven by durable
// reminders, its clips rendered by the simulated video provider (ffmpeg),
// its narration by the simulated speech provider, composed with ffmpeg and
// stored. Starts N jobs at once, polls GET /v1/jobs/{id} until each is
// final, and prints job completion time (202 → completed seen) p50/p99, the
// lost jobs (not completed within the deadline, or failed), then one JSON line.
//
// Flags: --jobs=100 --scenes=1 --narration=true --delay-ms=2000 (simulated
//        clip delay) --timeout-s=600 --poll-ms=250
import { join } from "node:path";
import { startEmbeddedTroupe } from "./lib/embedded-troupe.ts";
import { str } from "../test/support/troupe.ts";
import { fmt, summarize } from "../load/stats.ts";

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split(/=(.*)/s).slice(0, 2) as [string, string]));
const jobs = Number(args.get("jobs") ?? 100);
const scenes = Number(args.get("scenes") ?? 1);
const narration = (args.get("narration") ?? "true") === "true";
const delayMs = Number(args.get("delay-ms") ?? 2_000);
const timeoutMs = Number(args.get("timeout-s") ?? 600) * 1000;
const pollMs = Number(args.get("poll-ms") ?? 250);

const troupe = await startEmbeddedTroupe("bench-jobs", (dataDir) => ({ SIMULATED_VIDEO_DELAY_MS: String(delayMs), SIMULATED_VIDEO_DIR: join(dataDir, "simulated-video") }));
try {
  const { request: r, user } = troupe;
  const body = (i: number) => ({
    prompt: `bench job ${i}`,
    duration_seconds: 2,
    ...(scenes > 1 ? { scenes: Array.from({ length: scenes }, (_, s) => `bench job ${i} scene ${s}`) } : {}),
    ...(narration ? { narration_text: `Narration of bench job ${i}.` } : {}),
  });
  console.log(`bench:jobs: ${jobs} concurrent jobs, ${scenes} scene(s) each, narration ${narration}, simulated clip delay ${delayMs} ms, embedded host`);
  const started = performance.now();
  const accepted = await Promise.all(
    Array.from({ length: jobs }, async (_, i) => {
      const at = performance.now();
      const res = await r("POST", "/v1/video/generate", { token: user.testKey, body: body(i) });
      if (res.status !== 202) throw new Error(`job ${i}: ${res.status} ${res.text}`);
      return { id: str(res.body, "job_id"), at };
    }),
  );
  const acceptMs = performance.now() - started;
  const done = new Map<string, { ms: number; status: string }>();
  const deadline = performance.now() + timeoutMs;
  while (done.size < jobs && performance.now() < deadline) {
    await Promise.all(
      accepted
        .filter((j) => !done.has(j.id))
        .map(async (j) => {
          const res = await r("GET", `/v1/jobs/${j.id}`, { token: user.testKey });
          const status = str(res.body, "status");
          if (status === "completed" || status === "failed") done.set(j.id, { ms: performance.now() - j.at, status });
        }),
    );
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
  const completed = [...done.values()].filter((d) => d.status === "completed").map((d) => d.ms);
  const lost = jobs - completed.length;
  const s = summarize(completed);
  const wallS = (performance.now() - started) / 1000;
  console.log(`accepted ${jobs} jobs in ${fmt(acceptMs, 0)} ms (202 each)`);
  console.log(`completed ${completed.length}/${jobs} in ${fmt(wallS, 1)} s; job completion time p50 ${fmt(s.p50 / 1000)} s, p99 ${fmt(s.p99 / 1000)} s; lost ${lost}`);
  console.log(JSON.stringify({ bench: "jobs", host: "embedded", jobs, scenes, narration, delay_ms: delayMs, completed: completed.length, lost, p50_s: s.p50 / 1000, p99_s: s.p99 / 1000, wall_s: wallS }));
  if (lost > 0) process.exitCode = 1;
} finally {
  troupe.stop();
}
