// ElevenLabs /v1/speech-to-text: multipart with the audio file (the gateway
// has already downloaded the caller's URL through its outbound guard, so
// ElevenLabs never fetches a caller-chosen URL itself).
import { z } from "zod";
import { sendForJson, type UpstreamClient } from "../upstream-request.ts";
import type { TranscriptionRequest, TranscriptionResult } from "../media-types.ts";
import { audioFilename, multipart } from "../media-http.ts";
import { parseUpstream } from "../parse-upstream.ts";
import type { CallOptions } from "../types.ts";
import { elevenlabsHeaders, elevenlabsUrl, type ElevenLabsConfig } from "./api.ts";

const responseSchema = z
  .object({
    text: z.string(),
    language_code: z.string().optional(),
    words: z.array(z.object({ end: z.number().optional() }).passthrough()).optional(),
  })
  .passthrough();

export async function elevenlabsTranscribe(cfg: ElevenLabsConfig, client: UpstreamClient, req: TranscriptionRequest, opts: CallOptions): Promise<TranscriptionResult> {
  const form = multipart({ model_id: req.model, language_code: req.language }, [
    { name: "file", filename: audioFilename(req.audio.contentType), contentType: req.audio.contentType, bytes: req.audio.bytes },
  ]);
  const answer = await sendForJson(cfg.provider, client, elevenlabsUrl(cfg, "/v1/speech-to-text"), {
    headers: { ...elevenlabsHeaders(cfg), "content-type": form.contentType },
    body: form.body,
    signal: opts.signal,
  });
  const data = parseUpstream(cfg.provider, responseSchema, answer);
  const lastEnd = data.words?.at(-1)?.end;
  return { text: data.text, durationSeconds: lastEnd };
}
