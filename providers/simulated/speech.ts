// Simulated speech: a real, playable WAV (16 kHz mono PCM) whose length
// follows the text, about 15 characters a second like read-aloud speech.
// Each voice is a pitch; the tone rises and falls per word so it is not a
// flat beep. Deterministic: the same text and voice give the same bytes.
import { encodeWav } from "../../media/wav.ts";
import type { AudioBytes, SpeechRequest } from "../media-types.ts";

const sampleRate = 16_000;
const charsPerSecond = 15;
const voicePitchHz: Record<string, number> = { alto: 330, bass: 165, soprano: 660 };

export function simulatedSpeechSeconds(text: string): number {
  // At least half a second, so even "hi" is audible; at most 10 minutes.
  return Math.min(600, Math.max(0.5, text.length / charsPerSecond));
}

export function simulatedSpeech(req: SpeechRequest): AudioBytes {
  const seconds = simulatedSpeechSeconds(req.text);
  const n = Math.round(seconds * sampleRate);
  const base = voicePitchHz[req.voice] ?? 330;
  const words = req.text.split(/\s+/).filter(Boolean);
  const samples = new Float32Array(n);
  let phase = 0;
  for (let i = 0; i < n; i++) {
    const t = i / sampleRate;
    const word = words.length > 0 ? words[Math.floor((t / seconds) * words.length)] ?? "" : "";
    const freq = base * (1 + (word.length % 5) * 0.05);
    phase += (2 * Math.PI * freq) / sampleRate;
    // A 5 Hz envelope: syllable-like pulses.
    const envelope = 0.5 + 0.5 * Math.sin(2 * Math.PI * 5 * t);
    samples[i] = 0.3 * envelope * Math.sin(phase);
  }
  return { bytes: encodeWav(samples, sampleRate), contentType: "audio/wav" };
}
