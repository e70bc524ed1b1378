// The transcription answers OpenAI's `response_format` asks for, from what a
// provider returned: `json` {text}, `text` (the transcript), `verbose_json`
// {task, language, duration, text, segments}, and the `srt` and `vtt`
// subtitle files. Providers that time their segments (OpenAI's whisper-1)
// give them; the others answer one segment spanning the whole audio.
import type { TranscriptionResult } from "../../../providers/media-types.ts";

export const transcriptionFormats = ["json", "text", "verbose_json", "srt", "vtt"] as const;
export type TranscriptionFormat = (typeof transcriptionFormats)[number];

export interface TimedSegment {
  start: number;
  end: number;
  text: string;
}

/** The provider's timed segments, or one segment over the whole audio. */
export function segmentsOf(result: TranscriptionResult, durationSeconds: number): TimedSegment[] {
  if (result.segments && result.segments.length > 0) return result.segments;
  return [{ start: 0, end: durationSeconds, text: result.text.trim() }];
}

/** OpenAI names the language in English, lower case ("english"); a code it cannot name is kept as given. */
export function languageName(code: string | undefined): string {
  if (!code) return "unknown";
  if (code.length > 3) return code.toLowerCase();
  try {
    return (new Intl.DisplayNames(["en"], { type: "language" }).of(code) ?? code).toLowerCase();
  } catch {
    return code.toLowerCase();
  }
}

const round2 = (n: number) => Math.round(n * 100) / 100;

export function verboseJson(result: TranscriptionResult, durationSeconds: number, language: string | undefined) {
  return {
    task: "transcribe",
    language: languageName(result.language ?? language),
    duration: round2(durationSeconds),
    text: result.text,
    segments: segmentsOf(result, durationSeconds).map((s, id) => ({
      id,
      seek: 0,
      start: round2(s.start),
      end: round2(s.end),
      text: s.text,
      tokens: [] as number[],
      // Not reported by the providers behind this mount: neutral values.
      temperature: 0,
      avg_logprob: 0,
      compression_ratio: 0,
      no_speech_prob: 0,
    })),
    usage: { type: "duration", seconds: Math.ceil(durationSeconds) },
  };
}

/** hh:mm:ss with milliseconds after `separator` ("," in SRT, "." in WebVTT). */
export function timestamp(seconds: number, separator: "," | "."): string {
  const ms = Math.max(0, Math.round(seconds * 1000));
  const pad = (n: number, width = 2) => String(n).padStart(width, "0");
  return `${pad(Math.floor(ms / 3_600_000))}:${pad(Math.floor(ms / 60_000) % 60)}:${pad(Math.floor(ms / 1000) % 60)}${separator}${pad(ms % 1000, 3)}`;
}

export function srt(segments: TimedSegment[]): string {
  return segments.map((s, i) => `${i + 1}\n${timestamp(s.start, ",")} --> ${timestamp(s.end, ",")}\n${s.text.trim()}\n\n`).join("");
}

export function vtt(segments: TimedSegment[]): string {
  return `WEBVTT\n\n${segments.map((s) => `${timestamp(s.start, ".")} --> ${timestamp(s.end, ".")}\n${s.text.trim()}\n\n`).join("")}`;
}
