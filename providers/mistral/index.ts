// Mistral (la Plateforme): chat (streaming, tools) and embeddings at
// {MISTRAL_BASE_URL}/chat/completions and /embeddings with a Bearer key, in
// OpenAI's wire format with the differences dialect.ts lists.
import { z } from "zod";
import { optionalString } from "../../core/env.ts";
import { defineProvider } from "../descriptor.ts";
import { createOpenAIChatAndEmbeddings } from "../openai/index.ts";
import type { ProviderAdapter } from "../types.ts";
import type { UpstreamClient } from "../upstream-request.ts";
import { mistralDialect } from "./dialect.ts";
import { mistralModels } from "./models.ts";

export function createMistralAdapter(opts: { baseUrl: string; apiKey: string; client?: UpstreamClient | undefined }): ProviderAdapter {
  return createOpenAIChatAndEmbeddings({ ...opts, provider: "mistral", maxTokensField: "max_tokens", dialect: mistralDialect });
}

export const descriptor = defineProvider({
  name: "mistral",
  title: "Mistral",
  key: "mistral",
  env: { MISTRAL_API_KEY: optionalString, MISTRAL_BASE_URL: z.url().default("https://api.mistral.ai/v1") },
  secretEnv: ["MISTRAL_API_KEY"],
  settings: (e) => ({ apiKey: e.MISTRAL_API_KEY, baseUrl: e.MISTRAL_BASE_URL }),
  create: (s, deps) => (s.apiKey ? [createMistralAdapter({ baseUrl: s.baseUrl, apiKey: s.apiKey, client: deps.client })] : []),
  models: mistralModels,
});
