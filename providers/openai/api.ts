// OpenAI API endpoints and headers. Shared by openai-compatible endpoints,
// which differ only in base URL, key and name, and by the providers that
// speak OpenAI's wire format with a few differences (azure/, mistral/):
// those pass a dialect instead of copying the mapping.
import type { FinishReason } from "../types.ts";

/** Where a provider's OpenAI wire format differs from OpenAI's own; each absent hook means "as OpenAI". */
export interface OpenAIDialect {
  /** The URL of a chat or embeddings call for this model (Azure: per deployment, with api-version). */
  url?(kind: "chat" | "embeddings", model: string): string;
  /** The auth headers (Azure: api-key instead of a Bearer token). */
  headers?(): Record<string, string>;
  /** false: don't send stream_options (Mistral refuses it and sends usage in its last chunk anyway). */
  streamUsageOption?: boolean;
  /** Rewrites tool-call ids sent upstream, the same way each time (Mistral accepts only 9 letters or digits). */
  toolCallId?(id: string): string;
  /** The upstream finish_reason → Troupe's (Mistral adds model_length). */
  finishReason?(reason: string | null | undefined, hasToolCalls: boolean): FinishReason;
  /** false: embeddings requests carry neither `dimensions` nor `encoding_format` (Mistral's fixed-size models). */
  embedOptions?: boolean;
}

export interface OpenAIApiConfig {
  /** The name results report, e.g. "openai" or "groq". */
  provider: string;
  /** Including the version path, e.g. https://api.openai.com/v1. */
  baseUrl: string;
  apiKey?: string | undefined;
  /** OpenAI proper wants max_completion_tokens; most compatible servers only know max_tokens. */
  maxTokensField: "max_tokens" | "max_completion_tokens";
  dialect?: OpenAIDialect | undefined;
}

export function openaiHeaders(cfg: OpenAIApiConfig): Record<string, string> {
  if (cfg.dialect?.headers) return cfg.dialect.headers();
  return cfg.apiKey ? { authorization: `Bearer ${cfg.apiKey}` } : {};
}

export const openaiUrls = {
  chat: (cfg: OpenAIApiConfig, model: string) => cfg.dialect?.url?.("chat", model) ?? `${trimSlash(cfg.baseUrl)}/chat/completions`,
  embeddings: (cfg: OpenAIApiConfig, model: string) => cfg.dialect?.url?.("embeddings", model) ?? `${trimSlash(cfg.baseUrl)}/embeddings`,
};

export function trimSlash(url: string): string {
  return url.endsWith("/") ? url.slice(0, -1) : url;
}
