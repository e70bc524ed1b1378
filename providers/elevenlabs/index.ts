// The ElevenLabs adapter: speech and transcription.
import { createUpstreamClient, type UpstreamClient } from "../upstream-request.ts";
import type { ProviderAdapter } from "../types.ts";
import type { ElevenLabsConfig } from "./api.ts";
import { elevenlabsSpeech } from "./speech.ts";
import { elevenlabsTranscribe } from "./transcribe.ts";

export function createElevenLabsAdapter(opts: { baseUrl: string; apiKey: string; client?: UpstreamClient }): ProviderAdapter {
  const cfg: ElevenLabsConfig = { provider: "elevenlabs", baseUrl: opts.baseUrl, apiKey: opts.apiKey };
  const owned = opts.client === undefined;
  const client = opts.client ?? createUpstreamClient();
  return {
    provider: cfg.provider,
    speech: (req, o) => elevenlabsSpeech(cfg, client, req, o),
    transcribe: (req, o) => elevenlabsTranscribe(cfg, client, req, o),
    close: async () => {
      if (owned) await client.close();
    },
  };
}
