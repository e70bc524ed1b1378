// OpenAI API endpoints and headers. Shared by openai-compatible endpoints,
// which differ only in base URL, key and name.
export interface OpenAIApiConfig {
  /** The name results report, e.g. "openai" or "groq". */
  provider: string;
  /** Including the version path, e.g. https://api.openai.com/v1. */
  baseUrl: string;
  apiKey?: string | undefined;
  /** OpenAI proper wants max_completion_tokens; most compatible servers only know max_tokens. */
  maxTokensField: "max_tokens" | "max_completion_tokens";
}

export function openaiHeaders(cfg: OpenAIApiConfig): Record<string, string> {
  return cfg.apiKey ? { authorization: `Bearer ${cfg.apiKey}` } : {};
}

export const openaiUrls = {
  chat: (cfg: OpenAIApiConfig) => `${trimSlash(cfg.baseUrl)}/chat/completions`,
  embeddings: (cfg: OpenAIApiConfig) => `${trimSlash(cfg.baseUrl)}/embeddings`,
};

export function trimSlash(url: string): string {
  return url.endsWith("/") ? url.slice(0, -1) : url;
}
