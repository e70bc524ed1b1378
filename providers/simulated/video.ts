// The simulated video provider: real MP4 clips rendered with ffmpeg, a test
// pattern (or the segment's image, slowly zoomed) with the prompt drawn on
// it, ready `delayMs` after submission. It keeps no state: the task id
// encodes the prompt, the duration, the submission time and the image's
// content hash, so a poll after a Troupe restart (or on another replica
// sharing the cache directory) renders the same clip on demand. Rendered
// clips and submitted images are cached under `cacheDir`.
import { createHash, randomBytes } from "node:crypto";
import { access, mkdir, open, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { ffmpeg, FfmpegError, hasFilter } from "../../media/ffmpeg.ts";
import { ffmpegInput, sniffImage, type ImageFormat } from "../../media/sniff.ts";
import type { VideoAdapter, VideoSegmentRequest, VideoTask, VideoTaskStatus } from "../video.ts";

export interface SimulatedVideoOptions {
  /** A task is `running` this long after submission, then its clip is ready. */
  delayMs: number;
  /** Where rendered clips and submitted images are kept (shared by replicas on one machine). */
  cacheDir: string;
  now?: () => number;
}

/** Small clips render in well under a second on one core. */
const width = 640;
const height = 360;
const fps = 24;
/** Characters of the prompt drawn on the clip (and kept in the task id). */
const promptChars = 160;
const taskPrefix = "simvid_";

const specSchema = z
  .object({
    v: z.literal(1),
    /** Prompt (its start). */
    p: z.string(),
    /** Seconds. */
    d: z.number().positive().max(60),
    /** Submitted at, ms since the epoch. */
    t: z.number().int(),
    /** SHA-256 of the image to animate, or null for a test pattern. */
    i: z.string().regex(/^[0-9a-f]{64}$/).nullable(),
  })
  .strict();
type TaskSpec = z.infer<typeof specSchema>;

export function encodeTaskId(spec: TaskSpec): string {
  return taskPrefix + Buffer.from(JSON.stringify(spec), "utf8").toString("base64url");
}

export function decodeTaskId(id: string): TaskSpec | undefined {
  if (!id.startsWith(taskPrefix)) return undefined;
  try {
    const parsed = specSchema.safeParse(JSON.parse(Buffer.from(id.slice(taskPrefix.length), "base64url").toString("utf8")));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

const sha256 = (data: string | Uint8Array) => createHash("sha256").update(data).digest("hex");

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** Writes through a temporary name and renames, so a concurrent reader never sees half a file. */
async function writeAtomically(path: string, produce: (tmp: string) => Promise<void>): Promise<void> {
  const tmp = `${path}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    await produce(tmp);
    await rename(tmp, path);
  } finally {
    await rm(tmp, { force: true });
  }
}

/** The prompt wrapped to lines of about 40 characters, at most 4 lines. */
export function wrapPrompt(prompt: string): string {
  const lines: string[] = [];
  let line = "";
  for (const word of prompt.replace(/\s+/g, " ").trim().split(" ")) {
    if (line && line.length + 1 + word.length > 40) {
      lines.push(line);
      line = "";
    }
    line = line ? `${line} ${word}` : word.slice(0, 40);
  }
  if (line) lines.push(line);
  return lines.slice(0, 4).join("\n");
}

/** A segment image of no format the provider takes: its task fails, as one with an image ffmpeg cannot decode does. */
class UnrenderableImage extends Error {}

/** The stored image's format; a file that is no image the provider takes is refused, not rendered. */
async function imageFormatOf(path: string): Promise<ImageFormat> {
  const handle = await open(path, "r");
  try {
    const head = Buffer.alloc(16);
    const { bytesRead } = await handle.read(head, 0, head.length, 0);
    const format = sniffImage(head.subarray(0, bytesRead));
    if (!format) throw new UnrenderableImage("the segment's image is not a PNG, JPEG, WebP or GIF");
    return format;
  } finally {
    await handle.close();
  }
}

/** Filter-graph quoting for a path used as an option value. */
const filterPath = (p: string) => p.replace(/\\/g, "\\\\").replace(/'/g, "\\'").replace(/:/g, "\\:");

export function createSimulatedVideo(opts: SimulatedVideoOptions): VideoAdapter & { render(spec: TaskSpec, out: string, signal?: AbortSignal): Promise<void> } {
  const now = opts.now ?? Date.now;
  const clipsDir = join(opts.cacheDir, "clips");
  const imagesDir = join(opts.cacheDir, "images");
  const inFlight = new Map<string, Promise<void>>();
  let drawText: boolean | undefined;

  const renderArgs = async (spec: TaskSpec, textFile: string | undefined): Promise<string[]> => {
    const frames = Math.max(1, Math.round(spec.d * fps));
    // The image by its magic numbers (checked at the route too), read as that format only: ffmpeg never guesses what a caller's bytes are.
    const image = spec.i ? await imageFormatOf(join(imagesDir, spec.i)) : undefined;
    const input = spec.i && image
      ? ["-stream_loop", "-1", ...(image === "gif" ? [] : ["-framerate", String(fps)]), "-t", String(spec.d), ...ffmpegInput(join(imagesDir, spec.i), { image })]
      : ["-f", "lavfi", "-i", `testsrc2=size=${width}x${height}:rate=${fps}:duration=${spec.d}`];
    const filters: string[] = [];
    if (spec.i) {
      // Fill the frame, then zoom in slowly (10 % over the clip) so the image visibly moves.
      filters.push(
        `scale=${width}:${height}:force_original_aspect_ratio=increase,crop=${width}:${height}`,
        `zoompan=z='1+0.1*on/${frames}':x='iw/2-(iw/zoom/2)':y='ih/2-(ih/zoom/2)':d=1:s=${width}x${height}:fps=${fps}`,
      );
    }
    if (textFile) {
      filters.push(
        `drawtext=textfile='${filterPath(textFile)}':expansion=none:fontcolor=white:fontsize=22:line_spacing=6:box=1:boxcolor=black@0.6:boxborderw=8:x=(w-text_w)/2:y=h-text_h-24`,
      );
    }
    filters.push("format=yuv420p");
    return [...input, "-vf", filters.join(","), "-frames:v", String(frames), "-an", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-movflags", "+faststart", "-f", "mp4"];
  };

  const render = async (spec: TaskSpec, out: string, signal?: AbortSignal): Promise<void> => {
    await mkdir(clipsDir, { recursive: true });
    drawText ??= await hasFilter("drawtext");
    await writeAtomically(out, async (tmp) => {
      const textFile = `${tmp}.txt`;
      try {
        if (drawText && spec.p.trim()) {
          await writeFile(textFile, wrapPrompt(spec.p));
          try {
            await ffmpeg([...(await renderArgs(spec, textFile)), tmp], { timeoutMs: 60_000, signal });
            return;
          } catch (e) {
            if (signal?.aborted) throw e;
          }
          await ffmpeg([...(await renderArgs(spec, undefined)), tmp], { timeoutMs: 60_000, signal });
          // Only the text failed (drawtext present but no usable font): render without it from now on.
          drawText = false;
          return;
        }
        await ffmpeg([...(await renderArgs(spec, undefined)), tmp], { timeoutMs: 60_000, signal });
      } finally {
        await rm(textFile, { force: true });
      }
    });
  };

  return {
    render,
    async submit(req: VideoSegmentRequest): Promise<VideoTask> {
      let imageHash: string | null = null;
      if (req.image) {
        imageHash = sha256(req.image.bytes);
        const path = join(imagesDir, imageHash);
        if (!(await exists(path))) {
          await mkdir(imagesDir, { recursive: true });
          await writeAtomically(path, (tmp) => writeFile(tmp, req.image!.bytes));
        }
      }
      const spec: TaskSpec = { v: 1, p: req.prompt.slice(0, promptChars), d: req.duration_seconds, t: now(), i: imageHash };
      return { provider: "simulated", model: req.model, task_id: encodeTaskId(spec), poll_after_ms: Math.min(opts.delayMs, 1_000), duration_seconds: req.duration_seconds };
    },
    async poll(task: VideoTask, signal: AbortSignal): Promise<VideoTaskStatus> {
      const spec = decodeTaskId(task.task_id);
      if (!spec) return { state: "lost" };
      const elapsed = now() - spec.t;
      if (elapsed < opts.delayMs) {
        return { state: "running", progress: Math.max(0, Math.min(0.99, elapsed / opts.delayMs)), poll_after_ms: Math.min(1_000, opts.delayMs - elapsed) };
      }
      // The image went with the cache (another machine, a cleaned temp dir): this task cannot be finished, resubmitting can.
      if (spec.i && !(await exists(join(imagesDir, spec.i)))) return { state: "lost" };
      const path = join(clipsDir, `${sha256(task.task_id)}.mp4`);
      if (!(await exists(path))) {
        let rendering = inFlight.get(path);
        if (!rendering) {
          rendering = render(spec, path, signal).finally(() => inFlight.delete(path));
          inFlight.set(path, rendering);
        }
        try {
          await rendering;
        } catch (e) {
          // ffmpeg refused this input (an image it cannot decode): the same task would fail again, so it ends here.
          if (e instanceof FfmpegError && e.kind === "failed") return { state: "failed", code: "render_failed", message: `the simulated clip could not be rendered: ${e.stderrTail.slice(-200)}` };
          if (e instanceof UnrenderableImage) return { state: "failed", code: "render_failed", message: `the simulated clip could not be rendered: ${e.message}` };
          throw e;
        }
      }
      return { state: "succeeded", clip: { kind: "file", path } };
    },
    // Nothing runs between polls, so there is nothing to stop.
    async cancel(): Promise<void> {},
  };
}
