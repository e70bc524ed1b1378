// Video composition with ffmpeg (docs/api/video-jobs.md, "Composition"): join a job's clips into one video, lay the narration over it,
// take a clip's last frame (the next segment animates it), and probe media.
// Clips from different providers differ in size, frame rate and codec, so
// concatenation re-encodes every input to one H.264 yuv420p stream of the
// first clip's size; the output is an MP4 with +faststart (playable while it
// downloads). Narration is never cut: shorter narration is padded with
// silence to the video's length, longer narration makes the video hold its
// last frame until the narration ends.
import { ffmpeg, runTool, type RunOptions } from "./ffmpeg.ts";

export interface MediaProbe {
  has_video: boolean;
  has_audio: boolean;
  duration_seconds: number;
}

interface StreamInfo {
  codec_type?: string;
  codec_name?: string;
  width?: number;
  height?: number;
  pix_fmt?: string;
  duration?: string;
}

interface ProbeDetails extends MediaProbe {
  video?: StreamInfo | undefined;
}

/** Output frame rate of joined videos: what video models produce most often. */
const outputFps = 24;
/** Encoder settings shared by every re-encode: fast on a small machine, good enough for generated clips. */
const h264 = ["-c:v", "libx264", "-preset", "veryfast", "-crf", "23", "-pix_fmt", "yuv420p"];

async function probeDetails(path: string, opts: RunOptions): Promise<ProbeDetails> {
  const out = await runTool(
    "ffprobe",
    ["-v", "error", "-show_entries", "format=duration:stream=codec_type,codec_name,width,height,pix_fmt,duration", "-of", "json", path],
    { timeoutMs: opts.timeoutMs ?? 30_000, signal: opts.signal },
  );
  const parsed = JSON.parse(out) as { streams?: StreamInfo[]; format?: { duration?: string } };
  const streams = parsed.streams ?? [];
  const video = streams.find((s) => s.codec_type === "video");
  // The container's duration; a raw stream without one falls back to its longest stream.
  let duration = Number.parseFloat(parsed.format?.duration ?? "");
  if (!Number.isFinite(duration)) duration = Math.max(0, ...streams.map((s) => Number.parseFloat(s.duration ?? "0") || 0));
  return { has_video: video !== undefined, has_audio: streams.some((s) => s.codec_type === "audio"), duration_seconds: duration, video };
}

/** Which streams a file has and how long it lasts (ffprobe). */
export async function probeMedia(path: string, opts: RunOptions = {}): Promise<MediaProbe> {
  const { has_video, has_audio, duration_seconds } = await probeDetails(path, opts);
  return { has_video, has_audio, duration_seconds };
}

const even = (n: number) => Math.max(2, Math.round(n / 2) * 2);

/**
 * Joins clips in order into one MP4, re-encoding each to the first clip's
 * size (others letterboxed, never stretched), 24 fps, H.264 yuv420p. Audio
 * in the clips is dropped: video models make silent clips, and narration is
 * added afterwards by muxVoiceover.
 */
export async function concatClips(inputPaths: string[], outPath: string, opts: RunOptions = {}): Promise<void> {
  if (inputPaths.length === 0) throw new Error("concatClips needs at least one clip");
  const first = await probeDetails(inputPaths[0]!, opts);
  if (!first.video?.width || !first.video.height) throw new Error(`concatClips: ${inputPaths[0]} has no video stream`);
  const w = even(first.video.width);
  const h = even(first.video.height);
  const normalise = (i: number) =>
    `[${i}:v:0]scale=${w}:${h}:force_original_aspect_ratio=decrease,pad=${w}:${h}:(ow-iw)/2:(oh-ih)/2,setsar=1,fps=${outputFps},format=yuv420p[v${i}]`;
  const chains = inputPaths.map((_, i) => normalise(i));
  const joined = `${inputPaths.map((_, i) => `[v${i}]`).join("")}concat=n=${inputPaths.length}:v=1:a=0[out]`;
  await ffmpeg(
    [...inputPaths.flatMap((p) => ["-i", p]), "-filter_complex", [...chains, joined].join(";"), "-map", "[out]", ...h264, "-an", "-movflags", "+faststart", outPath],
    { timeoutMs: opts.timeoutMs ?? 60_000 + 30_000 * inputPaths.length, signal: opts.signal },
  );
}

/**
 * Lays narration (any audio ffmpeg reads) over a video as AAC. Narration
 * shorter than the video is padded with silence to the video's length;
 * longer narration makes the video hold its last frame until the narration
 * ends (tpad clone). The narration is never cut.
 */
export async function muxVoiceover(videoPath: string, audioPath: string, outPath: string, opts: RunOptions = {}): Promise<void> {
  const [video, audio] = await Promise.all([probeDetails(videoPath, opts), probeDetails(audioPath, opts)]);
  if (!video.has_video) throw new Error(`muxVoiceover: ${videoPath} has no video stream`);
  if (!audio.has_audio) throw new Error(`muxVoiceover: ${audioPath} has no audio stream`);
  const v = video.duration_seconds;
  const a = audio.duration_seconds;
  const run = { timeoutMs: opts.timeoutMs ?? 60_000 + 10_000 * Math.ceil(Math.max(v, a)), signal: opts.signal };
  const aac = ["-c:a", "aac", "-b:a", "128k"];
  if (a <= v) {
    // The video sets the length: pad the narration with silence up to it, keep the video stream as it is when it already plays everywhere.
    const copy = video.video?.codec_name === "h264" && video.video.pix_fmt === "yuv420p";
    await ffmpeg(
      [
        "-i", videoPath, "-i", audioPath,
        "-filter_complex", `[1:a:0]apad=whole_dur=${v.toFixed(3)}[a]`,
        "-map", "0:v:0", "-map", "[a]",
        ...(copy ? ["-c:v", "copy"] : h264), ...aac,
        "-t", v.toFixed(3), "-movflags", "+faststart", outPath,
      ],
      run,
    );
    return;
  }
  // The narration sets the length: hold the last frame for the difference (plus a frame, so rounding never cuts the narration's end).
  const hold = a - v + 1 / outputFps;
  await ffmpeg(
    [
      "-i", videoPath, "-i", audioPath,
      "-filter_complex", `[0:v:0]tpad=stop_mode=clone:stop_duration=${hold.toFixed(3)},format=yuv420p[v]`,
      "-map", "[v]", "-map", "1:a:0",
      ...h264, ...aac, "-movflags", "+faststart", outPath,
    ],
    run,
  );
}

/** Writes the video's last frame as a PNG (the next segment's image_to_video input). */
export async function extractLastFrame(videoPath: string, outPngPath: string, opts: RunOptions = {}): Promise<void> {
  // Seek to one second before the end, then overwrite the same image with every frame: the last one stays.
  await ffmpeg(["-sseof", "-1", "-i", videoPath, "-an", "-update", "1", "-vsync", "0", "-f", "image2", "-c:v", "png", outPngPath], {
    timeoutMs: opts.timeoutMs ?? 30_000,
    signal: opts.signal,
  });
  const probe = await probeDetails(outPngPath, opts);
  if (!probe.has_video) throw new Error(`extractLastFrame: no frame could be read from ${videoPath}`);
}
