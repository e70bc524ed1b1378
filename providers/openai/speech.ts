// OpenAI /v1/audio/speech: JSON in, the audio bytes out (mp3).
import { send, type UpstreamClient } from "../upstream-request.ts";
import type { AudioBytes, SpeechRequest } from "../media-types.ts";
import { maxProviderBytes, readBytes } from "../media-http.ts";
import type { CallOptions } from "../types.ts";
import { openaiHeaders, trimSlash, type OpenAIApiConfig } from "./api.ts";

export async function openaiSpeech(cfg: OpenAIApiConfig, client: UpstreamClient, req: SpeechRequest, opts: CallOptions): Promise<AudioBytes> {
  const body = await send(cfg.provider, client, `${trimSlash(cfg.baseUrl)}/audio/speech`, {
    headers: openaiHeaders(cfg),
    body: { model: req.model, input: req.text, voice: req.voice, response_format: "mp3" },
    signal: opts.signal,
  });
  return { bytes: await readBytes(cfg.provider, body, maxProviderBytes), contentType: "audio/mpeg" };
}
