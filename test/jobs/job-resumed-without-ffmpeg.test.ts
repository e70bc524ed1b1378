// A job made while ffmpeg was installed, resumed by a server started
// without it (same data directory; PATH pointing at an empty directory, the
// lookup execFile makes): it fails at its next step with
// capability_unavailable naming ffmpeg, instead of failing every poll of the
// simulated provider (which renders with ffmpeg) until the eighth, ~90 s on.
import t from "tap";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { field, signup, startTestTroupe, str } from "../support/troupe.ts";

t.setTimeout(90_000);
const dataDir = mkdtempSync(join(tmpdir(), "troupe-job-resumed-"));
// The clip takes 30 s: the job is still processing when the first server stops.
const env = { TROUPE_DATA_DIR: dataDir, SIMULATED_VIDEO_DELAY_MS: "30000", JOB_WATCHDOG_MS: "500" };
const withFfmpeg = await startTestTroupe(env);
const user = await signup(withFfmpeg, "resumed");
const started = await withFfmpeg.request("POST", "/v1/video/generate", { token: user.testKey, body: { prompt: "a cat", model: "simulated-video", duration_seconds: 1 } });
if (started.status !== 202) throw new Error(`video: ${started.status} ${started.text}`);
const jobId = str(started.body, "job_id");
await withFfmpeg.stop();

const path = process.env["PATH"];
process.env["PATH"] = mkdtempSync(join(tmpdir(), "no-ffmpeg-path-"));
const without = await startTestTroupe(env);
t.teardown(async () => {
  await without.stop();
  process.env["PATH"] = path;
});

t.test("the resumed job fails at once, saying why", async (t) => {
  const resumedMs = performance.now();
  let job: unknown;
  for (;;) {
    job = (await without.request("GET", `/v1/jobs/${jobId}`, { token: user.testKey })).body;
    if (field(job, "status") === "failed" || performance.now() - resumedMs > 20_000) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  t.equal(field(job, "status"), "failed", JSON.stringify(job));
  t.ok(performance.now() - resumedMs < 10_000, "within the first steps, not after eight failed polls");
  t.same(field(job, "error"), { code: "capability_unavailable", message: "video generation is unavailable on this server: ffmpeg and ffprobe are not installed (not found on PATH)" });
});
