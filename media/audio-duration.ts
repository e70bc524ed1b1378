// Seconds of audio, for pricing transcription: the WAV header when there is
// one, else ffprobe on a temporary copy (any format ffmpeg knows; a file, not
// stdin, because over a pipe ffprobe cannot tell an MP3's duration), read as
// the container its magic numbers name and nothing else (media/sniff.ts).
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ffmpegInput, sniffAudio } from "./sniff.ts";
import { wavDurationSeconds } from "./wav.ts";

/** Undefined when the duration cannot be told (not audio, ffprobe missing or failing). */
export async function audioDurationSeconds(bytes: Buffer, timeoutMs = 10_000): Promise<number | undefined> {
  const wav = wavDurationSeconds(bytes);
  if (wav !== undefined) return wav;
  const format = sniffAudio(bytes);
  if (format === undefined) return undefined;
  const dir = await mkdtemp(join(tmpdir(), "troupe-probe-"));
  try {
    const file = join(dir, "audio");
    await writeFile(file, bytes);
    const out = await new Promise<string | undefined>((resolve) => {
      execFile("ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "default=nw=1:nk=1", ...ffmpegInput(file, { audio: format })], { timeout: timeoutMs }, (error, stdout) =>
        resolve(error ? undefined : stdout),
      );
    });
    const seconds = Number.parseFloat(out?.trim() ?? "");
    return Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
