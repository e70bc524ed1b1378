// The Anthropic adapter (chat only; Anthropic has no embeddings API).
import type { ChatRequest } from "../chat-request.ts";
import type { ChatCallOptions, ProviderAdapter } from "../types.ts";
import { createUpstreamClient, type UpstreamClient } from "../upstream-request.ts";
import type { AnthropicApiConfig } from "./api.ts";
import { anthropicChat, anthropicChatStream } from "./chat.ts";

export interface AnthropicAdapterOptions {
  baseUrl: string;
  apiKey?: string | undefined;
  defaultMaxTokens?: number;
  client?: UpstreamClient;
}

export function createAnthropicAdapter(opts: AnthropicAdapterOptions): ProviderAdapter {
  // 4096: enough for a long answer, accepted by every current Claude model.
  const cfg: AnthropicApiConfig = {
    provider: "anthropic",
    baseUrl: opts.baseUrl,
    apiKey: opts.apiKey,
    defaultMaxTokens: opts.defaultMaxTokens ?? 4096,
  };
  const owned = opts.client === undefined;
  const client = opts.client ?? createUpstreamClient();
  return {
    provider: cfg.provider,
    chat: (req: ChatRequest, o: ChatCallOptions) => anthropicChat(cfg, client, req, o),
    chatStream: (req: ChatRequest, o: ChatCallOptions) => anthropicChatStream(cfg, client, req, o),
    close: async () => {
      if (owned) await client.close();
    },
  };
}
