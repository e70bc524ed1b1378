// Seconds of audio, for pricing transcription: the WAV header when there is
// one, else ffprobe reading the bytes from stdin (any format ffmpeg knows).
import { spawn } from "node:child_process";
import { wavDurationSeconds } from "./wav.ts";

/** Undefined when the duration cannot be told (not audio, ffprobe missing or failing). */
export async function audioDurationSeconds(bytes: Buffer, timeoutMs = 10_000): Promise<number | undefined> {
  const wav = wavDurationSeconds(bytes);
  if (wav !== undefined) return wav;
  return new Promise((resolve) => {
    const child = spawn("ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "default=nw=1:nk=1", "-i", "pipe:0"], {
      stdio: ["pipe", "pipe", "ignore"],
      timeout: timeoutMs,
    });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString("utf8")));
    child.on("error", () => resolve(undefined));
    child.on("close", (code) => {
      const seconds = Number.parseFloat(out.trim());
      resolve(code === 0 && Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined);
    });
    // ffprobe may stop reading once it knows enough: a closed pipe is not an error here.
    child.stdin.on("error", () => undefined);
    child.stdin.end(bytes);
  });
}
