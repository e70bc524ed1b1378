// The ElevenLabs adapter: speech and transcription.
import { createUpstreamClient, type UpstreamClient } from "../upstream-request.ts";
import type { ProviderAdapter } from "../types.ts";
import type { ElevenLabsConfig } from "./api.ts";
import { elevenlabsSpeech } from "./speech.ts";
import { elevenlabsTranscribe } from "./transcribe.ts";
import { z } from "zod";
import { optionalString } from "../../core/env.ts";
import { defineProvider } from "../descriptor.ts";

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

export const descriptor = defineProvider({
  name: "elevenlabs",
  title: "ElevenLabs",
  key: "elevenlabs",
  env: { ELEVENLABS_API_KEY: optionalString, ELEVENLABS_BASE_URL: z.url().default("https://api.elevenlabs.io") },
  secretEnv: ["ELEVENLABS_API_KEY"],
  settings: (e) => ({ apiKey: e.ELEVENLABS_API_KEY, baseUrl: e.ELEVENLABS_BASE_URL }),
  create: (s, deps) => (s.apiKey ? [createElevenLabsAdapter({ baseUrl: s.baseUrl, apiKey: s.apiKey, ...(deps.client ? { client: deps.client } : {}) })] : []),
})
