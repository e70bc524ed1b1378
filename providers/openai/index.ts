// The OpenAI adapter; openai-compatible endpoints reuse it with their own config.
import type { Dispatcher } from "undici";
import type { CallOptions, ChatRequest, EmbedRequest, ProviderAdapter } from "../types.ts";
import { createDispatcher } from "../http.ts";
import type { OpenAIApiConfig } from "./api.ts";
import { openaiChat, openaiChatStream } from "./chat.ts";
import { openaiEmbed } from "./embed.ts";

export interface OpenAIAdapterOptions {
  provider?: string;
  baseUrl: string;
  apiKey?: string | undefined;
  maxTokensField?: OpenAIApiConfig["maxTokensField"];
  /** Injected in tests; defaults to a keep-alive Agent owned by the adapter. */
  dispatcher?: Dispatcher;
}

export function createOpenAIAdapter(opts: OpenAIAdapterOptions): ProviderAdapter {
  const cfg: OpenAIApiConfig = {
    provider: opts.provider ?? "openai",
    baseUrl: opts.baseUrl,
    apiKey: opts.apiKey,
    maxTokensField: opts.maxTokensField ?? "max_completion_tokens",
  };
  const owned = opts.dispatcher === undefined;
  const dispatcher = opts.dispatcher ?? createDispatcher();
  return {
    provider: cfg.provider,
    chat: (req: ChatRequest, o: CallOptions) => openaiChat(cfg, dispatcher, req, o),
    chatStream: (req: ChatRequest, o: CallOptions) => openaiChatStream(cfg, dispatcher, req, o),
    embed: (req: EmbedRequest, o: CallOptions) => openaiEmbed(cfg, dispatcher, req, o),
    close: async () => {
      if (owned) await dispatcher.close();
    },
  };
}
