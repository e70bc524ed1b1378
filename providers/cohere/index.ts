// The Cohere adapter: embeddings only.
import type { CallOptions, EmbedRequest, ProviderAdapter } from "../types.ts";
import { createUpstreamClient, type UpstreamClient } from "../upstream-request.ts";
import { cohereEmbed } from "./embed.ts";

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
