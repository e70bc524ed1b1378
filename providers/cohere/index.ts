// The Cohere adapter: embeddings only.
import type { CallOptions, EmbedRequest, ProviderAdapter } from "../types.ts";
import { createUpstreamClient, type UpstreamClient } from "../upstream-request.ts";
import { cohereEmbed } from "./embed.ts";
import { z } from "zod";
import { optionalString } from "../../core/env.ts";
import { defineProvider } from "../descriptor.ts";

export interface CohereAdapterOptions {
  baseUrl: string;
  apiKey?: string | undefined;
  client?: UpstreamClient;
}

export function createCohereAdapter(opts: CohereAdapterOptions): ProviderAdapter {
  const cfg = { provider: "cohere", baseUrl: opts.baseUrl, apiKey: opts.apiKey };
  const owned = opts.client === undefined;
  const client = opts.client ?? createUpstreamClient();
  return {
    provider: cfg.provider,
    embed: (req: EmbedRequest, o: CallOptions) => cohereEmbed(cfg, client, req, o),
    close: async () => {
      if (owned) await client.close();
    },
  };
}

export const descriptor = defineProvider({
  name: "cohere",
  title: "Cohere",
  key: "cohere",
  env: { COHERE_API_KEY: optionalString, COHERE_BASE_URL: z.url().default("https://api.cohere.com") },
  secretEnv: ["COHERE_API_KEY"],
  settings: (e) => ({ apiKey: e.COHERE_API_KEY, baseUrl: e.COHERE_BASE_URL }),
  create: (s, deps) => (s.apiKey ? [createCohereAdapter({ baseUrl: s.baseUrl, apiKey: s.apiKey, ...(deps.client ? { client: deps.client } : {}) })] : []),
})
