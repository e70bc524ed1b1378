// The simulated video provider through the router: a task is running until
// its delay has passed, then a poll renders a real, playable MP4 (ffprobe)
// of the offered duration; an image segment animates the image; the task id
// alone is enough after a restart (a second adapter over the same cache
// directory); a lost image or a garbled id is `lost`.
import t from "tap";
import { mkdtempSync, rmSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { TroupeError } from "../../core/errors.ts";
import { Catalogue } from "../../providers/catalogue.ts";
import { Router } from "../../providers/router.ts";
import { createSimulatedAdapter } from "../../providers/simulated/index.ts";
import { createSimulatedVideo, decodeTaskId, encodeTaskId, wrapPrompt } from "../../providers/simulated/video.ts";
import type { ProviderAdapter } from "../../providers/types.ts";
import type { VideoTaskStatus } from "../../providers/video.ts";
import { probeMedia } from "../../media/video-compose.ts";
import { encodePng } from "../../media/png.ts";

const cacheDir = mkdtempSync(join(tmpdir(), "troupe-simvid-"));
t.teardown(() => rmSync(cacheDir, { recursive: true, force: true }));
const catalogue = Catalogue.load();
let clock = 1_700_000_000_000;
const now = () => clock;

function router(delayMs: number): Router {
  return new Router({
    catalogue,
    adapters: new Map<string, ProviderAdapter>([["simulated", createSimulatedAdapter({ video: { delayMs, cacheDir, now } })]]),
    timeoutMs: 30_000,
    maxAttempts: 2,
  });
}

function clipPath(s: VideoTaskStatus): string {
  if (s.state !== "succeeded" || s.clip.kind !== "file") throw new Error(`expected a rendered file, got ${JSON.stringify(s)}`);
  return s.clip.path;
}

t.test("running until the delay has passed, then a real clip of the offered duration", async (t) => {
  const r = router(2_000);
  const task = await r.submitVideo({ model: "simulated-video", prompt: "a red fox jumps over a sleeping dog", duration_seconds: 2.4, routing_strategy: "manual" });
  t.match(task, { provider: "simulated", model: "simulated-video", duration_seconds: 2 });
  t.ok(task.poll_after_ms > 0 && task.poll_after_ms <= 1_000);
  clock += 500;
  const early = await r.pollVideo(task);
  t.match(early, { state: "running", progress: 0.25 });
  clock += 1_500;
  const done = await r.pollVideo(task);
  const probe = await probeMedia(clipPath(done));
  t.ok(probe.has_video, "a video stream");
  t.notOk(probe.has_audio, "silent, like real providers' clips");
  t.ok(Math.abs(probe.duration_seconds - 2) < 0.1, `2 s clip: ${probe.duration_seconds}`);
  // Decodes end to end: a broken file makes ffmpeg fail here.
  execFileSync("ffmpeg", ["-v", "error", "-i", clipPath(done), "-f", "null", "-"]);
  t.same(await r.pollVideo(task), done, "a second poll answers the cached clip");
  await r.cancelVideo(task);
});

t.test("an image segment animates the image; without the cached image the task is lost", async (t) => {
  const r = router(0);
  const bytes = encodePng(320, 240, (x, y) => [x & 255, y & 255, 200]);
  const task = await r.submitVideo({
    model: "simulated-video",
    prompt: "zoom into the gradient",
    duration_seconds: 1,
    image: { url: "http://troupe.invalid/v1/files/x", content_type: "image/png", bytes },
    routing_strategy: "auto",
  });
  t.equal(decodeTaskId(task.task_id)?.i?.length, 64, "the id names the image by its hash");
  const probe = await probeMedia(clipPath(await r.pollVideo(task)));
  t.ok(probe.has_video && Math.abs(probe.duration_seconds - 1) < 0.1);
  const other = await r.submitVideo({ model: "simulated-video", prompt: "again", duration_seconds: 1, image: { url: "u", content_type: "image/png", bytes }, routing_strategy: "auto" });
  await rm(join(cacheDir, "images"), { recursive: true });
  t.same(await r.pollVideo(other), { state: "lost" });
});

t.test("an image ffmpeg cannot decode ends the task failed (polling again would fail again)", async (t) => {
  const r = router(0);
  const task = await r.submitVideo({
    model: "simulated-video",
    prompt: "garbage in",
    duration_seconds: 1,
    image: { url: "u", content_type: "image/png", bytes: Buffer.from("not an image at all") },
    routing_strategy: "manual",
  });
  t.match(await r.pollVideo(task), { state: "failed", code: "render_failed", message: /could not be rendered/ });
  // The text overlay is still on for the next clip: a bad image must not switch it off.
  const next = await r.pollVideo(await r.submitVideo({ model: "simulated-video", prompt: "still drawn", duration_seconds: 1, routing_strategy: "manual" }));
  const frame = execFileSync("ffmpeg", ["-v", "error", "-i", clipPath(next), "-vf", "crop=iw:60:0:ih-60,format=gray", "-frames:v", "1", "-f", "rawvideo", "-"]);
  t.ok(frame.some((px) => px > 240) && frame.some((px) => px < 40), "the caption box (white text on black) is drawn at the bottom");
});

t.test("stateless: another adapter (a restarted Troupe) finishes a task from its id alone", async (t) => {
  const first = createSimulatedVideo({ delayMs: 1_000, cacheDir, now });
  const task = await first.submit({ model: "simulated-video", prompt: "restart me", duration_seconds: 1 }, new AbortController().signal);
  clock += 1_000;
  const restarted = createSimulatedVideo({ delayMs: 1_000, cacheDir: mkdtempSync(join(tmpdir(), "troupe-simvid-other-")), now });
  const status = await restarted.poll(task, new AbortController().signal);
  t.equal(status.state, "succeeded");
  t.same(await restarted.poll({ ...task, task_id: "simvid_not-base64-json" }, new AbortController().signal), { state: "lost" });
  t.same(await restarted.poll({ ...task, task_id: "runway-task" }, new AbortController().signal), { state: "lost" });
  const spec = { v: 1 as const, p: "x", d: 1, t: 0, i: null };
  t.same(decodeTaskId(encodeTaskId(spec)), spec);
});

t.test("routing: text needs no image; 400 for bad durations and non-video models; poll of an unknown provider is 503", async (t) => {
  const r = router(0);
  const auto = await r.submitVideo({ model: "simulated-video", prompt: "p", duration_seconds: 30, routing_strategy: "cost" });
  t.equal(auto.duration_seconds, 10, "the nearest offered duration (the longest)");
  const bad = await r.submitVideo({ model: "simulated-video", prompt: "p", duration_seconds: 0, routing_strategy: "auto" }).catch((e: unknown) => e);
  t.match(bad, { code: "invalid_request", details: [{ path: "duration_seconds" }] });
  const wrong = await r.submitVideo({ model: "gpt-4o", prompt: "p", duration_seconds: 5, routing_strategy: "auto" }).catch((e: unknown) => e);
  t.match(wrong, { code: "invalid_request", message: /text model and cannot serve video/ });
  const noProvider = await r.pollVideo({ ...auto, provider: "runway" }).catch((e: unknown) => e);
  t.ok(noProvider instanceof TroupeError && noProvider.code === "no_provider_available");
  t.equal(r.listModels("video").find((m) => m.id === "simulated-video")?.available, true);
  t.equal(r.listModels("video").find((m) => m.id === "gen4_turbo")?.available, false, "no Runway key: unavailable");
});

t.test("the prompt is wrapped for drawing", async (t) => {
  t.equal(wrapPrompt("a  b\nc"), "a b c");
  const wrapped = wrapPrompt("word ".repeat(60)).split("\n");
  t.equal(wrapped.length, 4, "at most 4 lines");
  t.ok(wrapped.every((l) => l.length <= 40));
});
