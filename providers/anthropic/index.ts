// The Anthropic adapter (chat only; Anthropic has no embeddings API).
import type { ChatRequest } from "../chat-request.ts";
import type { ChatCallOptions, ProviderAdapter } from "../types.ts";
import { createUpstreamClient, type UpstreamClient } from "../upstream-request.ts";
import type { AnthropicApiConfig } from "./api.ts";
import { anthropicChat, anthropicChatStream } from "./chat.ts";
import { z } from "zod";
import { optionalString } from "../../core/env.ts";
import { defineProvider } from "../descriptor.ts";

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

export const descriptor = defineProvider({
  name: "anthropic",
  title: "Anthropic",
  key: "anthropic",
  env: { ANTHROPIC_API_KEY: optionalString, ANTHROPIC_BASE_URL: z.url().default("https://api.anthropic.com") },
  secretEnv: ["ANTHROPIC_API_KEY"],
  settings: (e) => ({ apiKey: e.ANTHROPIC_API_KEY, baseUrl: e.ANTHROPIC_BASE_URL }),
  create: (s, deps) => (s.apiKey ? [createAnthropicAdapter({ baseUrl: s.baseUrl, apiKey: s.apiKey, ...(deps.client ? { client: deps.client } : {}) })] : []),
})
