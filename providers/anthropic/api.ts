// Anthropic Messages API endpoint and headers.
export interface AnthropicApiConfig {
  provider: string;
  /** Without the version path, e.g. https://api.anthropic.com. */
  baseUrl: string;
  apiKey?: string | undefined;
  /** Anthropic requires max_tokens; used when the caller leaves it null. */
  defaultMaxTokens: number;
}

export const anthropicVersion = "2023-06-01";

export function anthropicHeaders(cfg: AnthropicApiConfig): Record<string, string> {
  const h: Record<string, string> = { "anthropic-version": anthropicVersion };
  if (cfg.apiKey) h["x-api-key"] = cfg.apiKey;
  return h;
}

export const anthropicUrls = {
  messages: (cfg: AnthropicApiConfig) => `${cfg.baseUrl.replace(/\/$/, "")}/v1/messages`,
};
