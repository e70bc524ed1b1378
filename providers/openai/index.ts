// The OpenAI adapter; openai-compatible endpoints reuse it with their own config.
import type { ChatRequest } from "../chat-request.ts";
import type { CallOptions, ChatCallOptions, EmbedRequest, ProviderAdapter } from "../types.ts";
import { createUpstreamClient, type UpstreamClient } from "../upstream-request.ts";
import type { OpenAIApiConfig, OpenAIDialect } from "./api.ts";
import { openaiChat, openaiChatStream } from "./chat.ts";
import { openaiEmbed } from "./embed.ts";
import { openaiImages } from "./images.ts";
import { openaiSpeech } from "./speech.ts";
import { openaiTranscribe } from "./transcribe.ts";
import { z } from "zod";
import { optionalString } from "../../core/env.ts";
import { defineProvider } from "../descriptor.ts";

export interface OpenAIAdapterOptions {
  provider?: string;
  baseUrl: string;
  apiKey?: string | undefined;
  maxTokensField?: OpenAIApiConfig["maxTokensField"];
  /** A provider speaking OpenAI's format with differences (azure/, mistral/). */
  dialect?: OpenAIDialect;
  /** Injected in tests; defaults to a keep-alive HTTP/1.1 client (http1/) owned by the adapter. */
  client?: UpstreamClient | undefined;
}

export function createOpenAIAdapter(opts: OpenAIAdapterOptions): ProviderAdapter {
  const cfg: OpenAIApiConfig = {
    provider: opts.provider ?? "openai",
    baseUrl: opts.baseUrl,
    apiKey: opts.apiKey,
    maxTokensField: opts.maxTokensField ?? "max_completion_tokens",
    dialect: opts.dialect,
  };
  const owned = opts.client === undefined;
  const client = opts.client ?? createUpstreamClient();
  return {
    provider: cfg.provider,
    chat: (req: ChatRequest, o: ChatCallOptions) => openaiChat(cfg, client, req, o),
    chatStream: (req: ChatRequest, o: ChatCallOptions) => openaiChatStream(cfg, client, req, o),
    embed: (req: EmbedRequest, o: CallOptions) => openaiEmbed(cfg, client, req, o),
    speech: (req, o) => openaiSpeech(cfg, client, req, o),
    transcribe: (req, o) => openaiTranscribe(cfg, client, req, o),
    generateImages: (req, o) => openaiImages(cfg, client, req, o),
    close: async () => {
      if (owned) await client.close();
    },
  };
}

/**
 * A provider that speaks OpenAI's chat and embeddings through a dialect
 * (azure/, mistral/): the adapter without audio and images, so the router
 * never sends those calls there.
 */
export function createOpenAIChatAndEmbeddings(opts: OpenAIAdapterOptions & { provider: string; dialect: OpenAIDialect }): ProviderAdapter {
  const { provider, chat, chatStream, embed, close } = createOpenAIAdapter(opts);
  return { provider, chat, chatStream, embed, close };
}

/** OPENAI_API_KEY turns OpenAI on. */
export const descriptor = defineProvider({
  name: "openai",
  title: "OpenAI",
  key: "openai",
  env: { OPENAI_API_KEY: optionalString, OPENAI_BASE_URL: z.url().default("https://api.openai.com/v1") },
  secretEnv: ["OPENAI_API_KEY"],
  settings: (e) => ({ apiKey: e.OPENAI_API_KEY, baseUrl: e.OPENAI_BASE_URL }),
  create: (s, deps) => (s.apiKey ? [createOpenAIAdapter({ baseUrl: s.baseUrl, apiKey: s.apiKey, ...(deps.client ? { client: deps.client } : {}) })] : []),
})
