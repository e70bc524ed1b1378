// ElevenLabs /v1/text-to-speech/{voice_id}: JSON {text, model_id} in,
// `output_format` as a query parameter, the audio bytes out.
import { send, type UpstreamClient } from "../upstream-request.ts";
import type { AudioBytes, SpeechRequest } from "../media-types.ts";
import { maxProviderBytes, readBytes } from "../media-http.ts";
import type { CallOptions } from "../types.ts";
import { elevenlabsHeaders, elevenlabsUrl, premadeVoiceIds, type ElevenLabsConfig } from "./api.ts";

const outputFormat = "mp3_44100_128";

export async function elevenlabsSpeech(cfg: ElevenLabsConfig, client: UpstreamClient, req: SpeechRequest, opts: CallOptions): Promise<AudioBytes> {
  const voiceId = premadeVoiceIds[req.voice] ?? req.voice;
  const url = elevenlabsUrl(cfg, `/v1/text-to-speech/${encodeURIComponent(voiceId)}?output_format=${outputFormat}`);
  const body = await send(cfg.provider, client, url, {
    headers: { ...elevenlabsHeaders(cfg), accept: "audio/mpeg" },
    body: { text: req.text, model_id: req.model },
    signal: opts.signal,
  });
  return { bytes: await readBytes(cfg.provider, body, maxProviderBytes), contentType: "audio/mpeg" };
}
