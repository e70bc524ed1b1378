// The Cohere adapter: embeddings only.
import type { Dispatcher } from "undici";
import type { CallOptions, EmbedRequest, ProviderAdapter } from "../types.ts";
import { createDispatcher } from "../http.ts";
import { cohereEmbed } from "./embed.ts";

export interface CohereAdapterOptions {
  baseUrl: string;
  apiKey?: string | undefined;
  dispatcher?: Dispatcher;
}

export function createCohereAdapter(opts: CohereAdapterOptions): ProviderAdapter {
  const cfg = { provider: "cohere", baseUrl: opts.baseUrl, apiKey: opts.apiKey };
  const owned = opts.dispatcher === undefined;
  const dispatcher = opts.dispatcher ?? createDispatcher();
  return {
    provider: cfg.provider,
    embed: (req: EmbedRequest, o: CallOptions) => cohereEmbed(cfg, dispatcher, req, o),
    close: async () => {
      if (owned) await dispatcher.close();
    },
  };
}
