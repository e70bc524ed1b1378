// Gemini (Generative Language API) endpoints and headers.
export interface GeminiApiConfig {
  provider: string;
  /** Without the version path, e.g. https://generativelanguage.googleapis.com. */
  baseUrl: string;
  apiKey?: string | undefined;
  /** Gemini has no tool call ids: we mint them. Injected for deterministic tests. */
  newToolCallId: () => string;
}

export function geminiHeaders(cfg: GeminiApiConfig): Record<string, string> {
  return cfg.apiKey ? { "x-goog-api-key": cfg.apiKey } : {};
}

const base = (cfg: GeminiApiConfig, model: string) =>
  `${cfg.baseUrl.replace(/\/$/, "")}/v1beta/models/${encodeURIComponent(model)}`;

export const geminiUrls = {
  generate: (cfg: GeminiApiConfig, model: string) => `${base(cfg, model)}:generateContent`,
  stream: (cfg: GeminiApiConfig, model: string) => `${base(cfg, model)}:streamGenerateContent?alt=sse`,
};
