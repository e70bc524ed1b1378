// The Gemini adapter (chat, vision through inline_data/file_data parts).
import { randomUUID } from "node:crypto";
import type { ChatRequest } from "../chat-request.ts";
import type { ChatCallOptions, ProviderAdapter } from "../types.ts";
import { createUpstreamClient, type UpstreamClient } from "../upstream-request.ts";
import type { GeminiApiConfig } from "./api.ts";
import { geminiChat, geminiChatStream } from "./chat.ts";

export interface GeminiAdapterOptions {
  baseUrl: string;
  apiKey?: string | undefined;
  client?: UpstreamClient;
  newToolCallId?: () => string;
}

export function createGeminiAdapter(opts: GeminiAdapterOptions): ProviderAdapter {
  const cfg: GeminiApiConfig = {
    provider: "gemini",
    baseUrl: opts.baseUrl,
    apiKey: opts.apiKey,
    newToolCallId: opts.newToolCallId ?? (() => `call_${randomUUID().replaceAll("-", "").slice(0, 24)}`),
  };
  const owned = opts.client === undefined;
  const client = opts.client ?? createUpstreamClient();
  return {
    provider: cfg.provider,
    chat: (req: ChatRequest, o: ChatCallOptions) => geminiChat(cfg, client, req, o),
    chatStream: (req: ChatRequest, o: ChatCallOptions) => geminiChatStream(cfg, client, req, o),
    close: async () => {
      if (owned) await client.close();
    },
  };
}
