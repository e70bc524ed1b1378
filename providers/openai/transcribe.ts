// OpenAI /v1/audio/transcriptions: a multipart upload of the audio (OpenAI
// does not fetch URLs, so the gateway downloads audio_url first).
import { z } from "zod";
import { sendForJson, type UpstreamClient } from "../upstream-request.ts";
import type { TranscriptionRequest, TranscriptionResult } from "../media-types.ts";
import { audioFilename, multipart } from "../media-http.ts";
import type { CallOptions } from "../types.ts";
import { openaiHeaders, trimSlash, type OpenAIApiConfig } from "./api.ts";
import { parseUpstream } from "../parse-upstream.ts";

const responseSchema = z
  .object({
    text: z.string(),
    duration: z.number().optional(),
    language: z.string().optional(),
    segments: z.array(z.object({ start: z.number(), end: z.number(), text: z.string() }).passthrough()).optional(),
  })
  .passthrough();

export async function openaiTranscribe(cfg: OpenAIApiConfig, client: UpstreamClient, req: TranscriptionRequest, opts: CallOptions): Promise<TranscriptionResult> {
  // verbose_json carries the duration (whisper-1); newer models only know json.
  const format = req.model.startsWith("whisper") ? "verbose_json" : "json";
  const form = multipart({ model: req.model, language: req.language, response_format: format }, [
    { name: "file", filename: audioFilename(req.audio.contentType), contentType: req.audio.contentType, bytes: req.audio.bytes },
  ]);
  const answer = await sendForJson(cfg.provider, client, `${trimSlash(cfg.baseUrl)}/audio/transcriptions`, {
    headers: { ...openaiHeaders(cfg), "content-type": form.contentType },
    body: form.body,
    signal: opts.signal,
  });
  const data = parseUpstream(cfg.provider, responseSchema, answer);
  return { text: data.text, durationSeconds: data.duration, language: data.language, segments: data.segments?.map((s) => ({ start: s.start, end: s.end, text: s.text })) };
}
