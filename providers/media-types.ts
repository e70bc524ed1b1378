// What media adapters receive and return (speech, transcription, images).
// Adapters return bytes, base64 or a provider URL as the provider gives
// them; re-hosting into the file store happens above the router
// (media/rehost.ts), so no provider URL ever reaches a caller.
import type { AudioBytes } from "../media/audio-bytes.ts";
import type { CallOptions } from "./types.ts";
import type { VideoAdapter } from "./video.ts";

/** Named here with the rest of what adapters return, so adapters import their whole vocabulary from one module. */
export type { AudioBytes };

export interface SpeechRequest {
  /** The upstream model name. */
  model: string;
  voice: string;
  text: string;
}

export interface TranscriptionRequest {
  model: string;
  /** The audio, already downloaded through the outbound fetcher. */
  audio: AudioBytes;
  /** ISO 639-1 code, or undefined to let the provider detect it. */
  language?: string | undefined;
}

export interface TranscriptionResult {
  text: string;
  /** Seconds of audio, when the provider reports it. */
  durationSeconds?: number | undefined;
  /** Timed segments, when the provider reports them (OpenAI's verbose_json). */
  segments?: { start: number; end: number; text: string }[] | undefined;
  /** The language the provider heard (a code or OpenAI's English name), when it says. */
  language?: string | undefined;
}

export interface ImageGenerationRequest {
  model: string;
  prompt: string;
  width: number;
  height: number;
  /** Images wanted from this one call (≤ the model's images_per_call). */
  n: number;
}

/** One generated image as the provider handed it over. */
export type ProviderImage = { kind: "bytes"; bytes: Buffer; contentType: string } | { kind: "url"; url: string };

export interface MediaAdapterMethods {
  speech?(req: SpeechRequest, opts: CallOptions): Promise<AudioBytes>;
  transcribe?(req: TranscriptionRequest, opts: CallOptions): Promise<TranscriptionResult>;
  generateImages?(req: ImageGenerationRequest, opts: CallOptions): Promise<ProviderImage[]>;
  /** Asynchronous video tasks (providers/video.ts); the router's submitVideo/pollVideo/cancelVideo drive it. */
  video?: VideoAdapter;
}

/** Which catalogue categories an adapter can serve (the router asks before planning). */
export function adapterServesCategory(
  a: { chat?: unknown; embed?: unknown } & MediaAdapterMethods,
  category: string,
): boolean {
  if (category === "embedding") return a.embed !== undefined;
  if (category === "audio") return a.speech !== undefined || a.transcribe !== undefined;
  if (category === "image") return a.generateImages !== undefined;
  if (category === "video") return a.video !== undefined;
  return a.chat !== undefined;
}
