// Converts speech audio to the format a caller asked for (OpenAI's speech
// `response_format`) with ffmpeg, when the provider made another one. Input
// and output go through a private temporary directory (ffmpeg needs to seek
// some containers), removed afterwards.
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AudioBytes } from "./audio-bytes.ts";
import { ffmpeg, type RunOptions } from "./ffmpeg.ts";

export const speechFormats = ["mp3", "opus", "aac", "flac", "wav", "pcm"] as const;
export type SpeechFormat = (typeof speechFormats)[number];

/** Each format's Content-Type (as OpenAI answers them) and ffmpeg's output arguments. */
const targets: Record<SpeechFormat, { contentType: string; args: string[] }> = {
  mp3: { contentType: "audio/mpeg", args: ["-c:a", "libmp3lame", "-b:a", "128k", "-f", "mp3"] },
  // Opus in an Ogg container, as OpenAI sends it.
  opus: { contentType: "audio/ogg", args: ["-c:a", "libopus", "-b:a", "64k", "-f", "ogg"] },
  aac: { contentType: "audio/aac", args: ["-c:a", "aac", "-b:a", "128k", "-f", "adts"] },
  flac: { contentType: "audio/flac", args: ["-c:a", "flac", "-f", "flac"] },
  wav: { contentType: "audio/wav", args: ["-c:a", "pcm_s16le", "-f", "wav"] },
  // OpenAI's pcm: raw samples, 24 kHz, 16-bit signed little-endian, mono, no header.
  pcm: { contentType: "audio/pcm", args: ["-c:a", "pcm_s16le", "-ar", "24000", "-ac", "1", "-f", "s16le"] },
};

/** Content-Types a provider may answer that already are the format (nothing to convert). */
const alreadyIs: Record<SpeechFormat, readonly string[]> = {
  mp3: ["audio/mpeg", "audio/mp3"],
  opus: ["audio/ogg", "audio/opus"],
  aac: ["audio/aac"],
  flac: ["audio/flac", "audio/x-flac"],
  wav: ["audio/wav", "audio/x-wav", "audio/wave"],
  pcm: ["audio/pcm"],
};

export function speechContentType(format: SpeechFormat): string {
  return targets[format].contentType;
}

/** True when `audio` is not already in `format`: converting it runs ffmpeg. */
export function needsConversion(audio: AudioBytes, format: SpeechFormat): boolean {
  return !alreadyIs[format].includes(audio.contentType.split(";")[0]!.trim().toLowerCase());
}

/** The audio in `format`: unchanged when it already is, else re-encoded by ffmpeg. */
export async function convertSpeech(audio: AudioBytes, format: SpeechFormat, opts: RunOptions = {}): Promise<AudioBytes> {
  if (!needsConversion(audio, format)) return audio;
  const dir = await mkdtemp(join(tmpdir(), "troupe-speech-"));
  try {
    const input = join(dir, "in");
    const output = join(dir, "out");
    await writeFile(input, audio.bytes);
    await ffmpeg(["-i", input, "-vn", ...targets[format].args, output], { timeoutMs: 60_000, ...opts });
    return { bytes: await readFile(output), contentType: targets[format].contentType };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
