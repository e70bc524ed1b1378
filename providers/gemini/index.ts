// The Gemini adapter (chat, vision through inline_data/file_data parts).
import { randomUUID } from "node:crypto";
import type { Dispatcher } from "undici";
import type { CallOptions, ChatRequest, ProviderAdapter } from "../types.ts";
import { createDispatcher } from "../http.ts";
import type { GeminiApiConfig } from "./api.ts";
import { geminiChat, geminiChatStream } from "./chat.ts";

export interface GeminiAdapterOptions {
  baseUrl: string;
  apiKey?: string | undefined;
  dispatcher?: Dispatcher;
  newToolCallId?: () => string;
}

export function createGeminiAdapter(opts: GeminiAdapterOptions): ProviderAdapter {
  const cfg: GeminiApiConfig = {
    provider: "gemini",
    baseUrl: opts.baseUrl,
    apiKey: opts.apiKey,
    newToolCallId: opts.newToolCallId ?? (() => `call_${randomUUID().replaceAll("-", "").slice(0, 24)}`),
  };
  const owned = opts.dispatcher === undefined;
  const dispatcher = opts.dispatcher ?? createDispatcher();
  return {
    provider: cfg.provider,
    chat: (req: ChatRequest, o: CallOptions) => geminiChat(cfg, dispatcher, req, o),
    chatStream: (req: ChatRequest, o: CallOptions) => geminiChatStream(cfg, dispatcher, req, o),
    close: async () => {
      if (owned) await dispatcher.close();
    },
  };
}
