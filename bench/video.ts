// npm run bench:video — wall-clock cost of the ffmpeg work behind one video
// job on this machine: rendering simulated clips (test pattern with the
// prompt drawn; and animating an image), joining them (re-encode to one
// H.264 stream), laying a narration over them (shorter: padded; longer: last
// frame held), and extracting a last frame. Median of `--runs` runs each.
// Usage: npm run bench:video [-- --runs 3 --seconds 5 --clips 3]
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createSimulatedVideo } from "../providers/simulated/video.ts";
import { concatClips, extractLastFrame, muxVoiceover, probeMedia } from "../media/video-compose.ts";
import { encodePng } from "../media/png.ts";

const { values } = parseArgs({ options: { runs: { type: "string", default: "3" }, seconds: { type: "string", default: "5" }, clips: { type: "string", default: "3" } } });
const runs = Number(values.runs);
const seconds = Number(values.seconds);
const clipCount = Number(values.clips);

const dir = mkdtempSync(join(tmpdir(), "troupe-bench-video-"));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
async function time(label: string, fn: (run: number) => Promise<void>): Promise<void> {
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn(i);
    ms.push(performance.now() - t0);
  }
  console.log(`${label.padEnd(58)} median ${median(ms).toFixed(0).padStart(6)} ms  (runs: ${ms.map((m) => m.toFixed(0)).join(", ")})`);
}

const signal = new AbortController().signal;
const clips: string[] = [];
try {
  await time(`simulated clip, test pattern + prompt, ${seconds} s 640x360`, async (run) => {
    const video = createSimulatedVideo({ delayMs: 0, cacheDir: join(dir, `cache-${run}`) });
    for (let c = 0; c < (run === 0 ? clipCount : 1); c++) {
      const task = await video.submit({ model: "simulated-video", prompt: `scene ${c}: a lighthouse at dusk, waves below`, duration_seconds: seconds }, signal);
      const status = await video.poll(task, signal);
      if (status.state !== "succeeded" || status.clip.kind !== "file") throw new Error("render failed");
      if (run === 0) clips.push(status.clip.path);
    }
  });
  const image = { url: "file:///bench.png", content_type: "image/png", bytes: encodePng(1280, 720, (x, y) => [x & 255, y & 255, 128]) };
  await time(`simulated clip, 1280x720 image zoomed, ${seconds} s`, async (run) => {
    const video = createSimulatedVideo({ delayMs: 0, cacheDir: join(dir, `image-${run}`) });
    const task = await video.submit({ model: "simulated-video", prompt: "animate", duration_seconds: seconds, image }, signal);
    if ((await video.poll(task, signal)).state !== "succeeded") throw new Error("render failed");
  });
  await time(`concatClips: ${clipCount} clips of ${seconds} s`, (run) => concatClips(clips, join(dir, `joined-${run}.mp4`)));
  const joined = join(dir, "joined-0.mp4");
  const total = (await probeMedia(joined)).duration_seconds;
  execFileSync("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", `sine=duration=${total / 2}`, join(dir, "short.wav")]);
  execFileSync("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", `sine=duration=${total + 3}`, join(dir, "long.wav")]);
  await time(`muxVoiceover: narration ${(total / 2).toFixed(1)} s < video ${total.toFixed(1)} s (video copied)`, (run) => muxVoiceover(joined, join(dir, "short.wav"), join(dir, `short-${run}.mp4`)));
  await time(`muxVoiceover: narration ${(total + 3).toFixed(1)} s > video (last frame held, re-encode)`, (run) => muxVoiceover(joined, join(dir, "long.wav"), join(dir, `long-${run}.mp4`)));
  await time("extractLastFrame", (run) => extractLastFrame(joined, join(dir, `last-${run}.png`)));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
