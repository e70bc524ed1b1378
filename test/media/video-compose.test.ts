// ffmpeg composition on real files: clips of different sizes, frame rates
// and codecs join into one H.264 MP4 of the summed length; narration longer
// than the video holds the last frame (never cut), shorter narration is
// padded with silence; the last frame comes out as a PNG; failures are clear.
import t from "tap";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { concatClips, extractLastFrame, muxVoiceover, probeMedia } from "../../media/video-compose.ts";
import { FfmpegError, hasFilter, runTool } from "../../media/ffmpeg.ts";

const dir = mkdtempSync(join(tmpdir(), "troupe-compose-"));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string) => join(dir, name);
const gen = (args: string[]) => execFileSync("ffmpeg", ["-v", "error", "-y", ...args]);

// Two "providers": 640x360 H.264 at 24 fps, and 320x320 MPEG-4 at 30 fps with a stray audio track.
gen(["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=24:duration=2", "-c:v", "libx264", "-pix_fmt", "yuv420p", file("a.mp4")]);
gen(["-f", "lavfi", "-i", "testsrc=size=320x320:rate=30:duration=1.5", "-f", "lavfi", "-i", "sine=duration=1.5", "-c:v", "mpeg4", "-shortest", file("b.mp4")]);
gen(["-f", "lavfi", "-i", "sine=frequency=440:duration=5", file("long.wav")]);
gen(["-f", "lavfi", "-i", "sine=frequency=660:duration=1", file("short.mp3")]);

const streams = (path: string) =>
  JSON.parse(runToolSync(["-v", "error", "-show_entries", "stream=codec_type,codec_name,width,height,pix_fmt,r_frame_rate,duration", "-of", "json", path])) as {
    streams: { codec_type: string; codec_name: string; width?: number; height?: number; pix_fmt?: string; r_frame_rate?: string; duration?: string }[];
  };
/** Peak level in dB of a file's audio between `from` and `from + seconds` (ffmpeg's volumedetect). */
function maxVolumeDb(path: string, from: number, seconds: number): number {
  const r = spawnSync("ffmpeg", ["-hide_banner", "-ss", String(from), "-t", String(seconds), "-i", path, "-map", "0:a", "-af", "volumedetect", "-f", "null", "-"], { encoding: "utf8" });
  const m = /max_volume: (-?[\d.]+|-inf) dB/.exec(r.stderr);
  if (!m) throw new Error(`volumedetect said nothing: ${r.stderr.slice(-300)}`);
  return m[1] === "-inf" ? -Infinity : Number(m[1]);
}
function runToolSync(args: string[]): string {
  return execFileSync("ffprobe", args, { encoding: "utf8" });
}

t.test("concatClips joins clips from different providers into one H.264 stream of the first clip's size", async (t) => {
  await concatClips([file("a.mp4"), file("b.mp4")], file("joined.mp4"));
  const probe = await probeMedia(file("joined.mp4"));
  t.ok(probe.has_video);
  t.notOk(probe.has_audio, "clips are silent; stray audio is dropped");
  t.ok(Math.abs(probe.duration_seconds - 3.5) < 0.15, `2 s + 1.5 s ≈ ${probe.duration_seconds}`);
  const [video] = streams(file("joined.mp4")).streams;
  t.match(video, { codec_type: "video", codec_name: "h264", width: 640, height: 360, pix_fmt: "yuv420p", r_frame_rate: "24/1" });
  // +faststart: the moov atom comes before mdat.
  const head = execFileSync("head", ["-c", "4096", file("joined.mp4")]).toString("latin1");
  t.ok(head.indexOf("moov") !== -1 && head.indexOf("moov") < (head.indexOf("mdat") === -1 ? Infinity : head.indexOf("mdat")), "moov before mdat");
});

t.test("concatClips: one clip is re-encoded too; an empty list and a missing file are clear errors", async (t) => {
  await concatClips([file("b.mp4")], file("single.mp4"));
  t.match(streams(file("single.mp4")).streams, [{ codec_name: "h264", width: 320, height: 320 }]);
  await t.rejects(concatClips([], file("none.mp4")), /at least one clip/);
  await t.rejects(concatClips([file("missing.mp4")], file("none.mp4")), FfmpegError);
});

t.test("muxVoiceover: narration longer than the video holds the last frame until it ends", async (t) => {
  await muxVoiceover(file("joined.mp4"), file("long.wav"), file("long.mp4"));
  const probe = await probeMedia(file("long.mp4"));
  t.ok(probe.has_video && probe.has_audio, "both streams");
  const s = streams(file("long.mp4")).streams;
  const video = Number(s.find((x) => x.codec_type === "video")?.duration);
  const audio = Number(s.find((x) => x.codec_type === "audio")?.duration);
  t.equal(s.find((x) => x.codec_type === "audio")?.codec_name, "aac");
  t.ok(audio >= 4.95, `narration not cut: ${audio} s of 5 s`);
  t.ok(video >= 4.95 && video < 5.2, `video held to the narration's end: ${video} s`);
  t.ok(Math.abs(probe.duration_seconds - 5) < 0.15, `file lasts ≈ 5 s: ${probe.duration_seconds}`);
});

t.test("muxVoiceover: narration shorter than the video is padded with silence to the video's length", async (t) => {
  await muxVoiceover(file("joined.mp4"), file("short.mp3"), file("short.mp4"));
  const s = streams(file("short.mp4")).streams;
  const video = Number(s.find((x) => x.codec_type === "video")?.duration);
  const audio = Number(s.find((x) => x.codec_type === "audio")?.duration);
  t.ok(Math.abs(video - 3.5) < 0.1, `video keeps its 3.5 s: ${video}`);
  t.ok(Math.abs(audio - 3.5) < 0.1, `narration padded to 3.5 s: ${audio}`);
  t.equal(s.find((x) => x.codec_type === "video")?.codec_name, "h264");
  // The padding is silence: the narration's second is loud, the padded tail carries no signal.
  t.ok(maxVolumeDb(file("short.mp4"), 0, 0.9) > -20, "the narration is there");
  t.ok(maxVolumeDb(file("short.mp4"), 2.5, 1) < -80, "the padding is silent");
});

t.test("muxVoiceover refuses inputs without the stream it needs", async (t) => {
  await t.rejects(muxVoiceover(file("long.wav"), file("long.wav"), file("x.mp4")), /has no video stream/);
  await t.rejects(muxVoiceover(file("joined.mp4"), file("joined.mp4"), file("x.mp4")), /has no audio stream/);
});

t.test("extractLastFrame writes the final frame as a PNG of the video's size", async (t) => {
  await extractLastFrame(file("joined.mp4"), file("last.png"));
  const [image] = streams(file("last.png")).streams;
  t.match(image, { codec_name: "png", width: 640, height: 360 });
  writeFileSync(file("not-video.mp4"), "this is not a video");
  await t.rejects(extractLastFrame(file("not-video.mp4"), file("none.png")), FfmpegError);
});

t.test("runTool: time limits and missing tools are clear errors", async (t) => {
  await t.rejects(runTool("ffmpeg", ["-v", "error", "-f", "lavfi", "-re", "-i", "testsrc=duration=30", "-f", "null", "-"], { timeoutMs: 300 }), /did not finish within 300 ms/);
  const ac = new AbortController();
  const p = runTool("ffmpeg", ["-v", "error", "-f", "lavfi", "-re", "-i", "testsrc=duration=30", "-f", "null", "-"], { signal: ac.signal });
  ac.abort(new Error("job cancelled"));
  await t.rejects(p, /job cancelled/);
  t.equal(await hasFilter("tpad"), true);
  t.equal(await hasFilter("no-such-filter"), false);
});
