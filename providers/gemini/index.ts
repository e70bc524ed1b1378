// The Gemini adapter (chat, vision through inline_data/file_data parts).
import { randomUUID } from "node:crypto";
import type { ChatRequest } from "../chat-request.ts";
import type { ChatCallOptions, ProviderAdapter } from "../types.ts";
import { createUpstreamClient, type UpstreamClient } from "../upstream-request.ts";
import type { GeminiApiConfig } from "./api.ts";
import { geminiChat, geminiChatStream } from "./chat.ts";
import { z } from "zod";
import { optionalString } from "../../core/env.ts";
import { defineProvider } from "../descriptor.ts";

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

export const descriptor = defineProvider({
  name: "gemini",
  title: "Gemini",
  key: "gemini",
  env: { GEMINI_API_KEY: optionalString, GEMINI_BASE_URL: z.url().default("https://generativelanguage.googleapis.com") },
  secretEnv: ["GEMINI_API_KEY"],
  settings: (e) => ({ apiKey: e.GEMINI_API_KEY, baseUrl: e.GEMINI_BASE_URL }),
  create: (s, deps) => (s.apiKey ? [createGeminiAdapter({ baseUrl: s.baseUrl, apiKey: s.apiKey, ...(deps.client ? { client: deps.client } : {}) })] : []),
})
