// Simulated transcription: a deterministic text derived from the audio's
// bytes, with the duration read from a WAV header (or estimated from the
// size at 16 kB/s, a typical compressed-speech rate, for other formats).
import { createHash } from "node:crypto";
import { wavDurationSeconds } from "../../media/wav.ts";
import type { TranscriptionRequest, TranscriptionResult } from "../media-types.ts";
import { loremWords } from "./hash.ts";

export function simulatedTranscribe(req: TranscriptionRequest): TranscriptionResult {
  const seconds = wavDurationSeconds(req.audio.bytes) ?? req.audio.bytes.length / 16_000;
  const seed = createHash("sha256").update(req.audio.bytes).digest("hex");
  // About two words a second, like speech; at least one word.
  const words = Math.max(1, Math.round(seconds * 2));
  const text = loremWords(`${seed}:${req.language ?? ""}`, Math.min(words, 2000));
  return { text: text.charAt(0).toUpperCase() + text.slice(1) + ".", durationSeconds: Math.round(seconds * 1000) / 1000 };
}
