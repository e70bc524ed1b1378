// Cohere v2 API endpoint and headers.
export interface CohereApiConfig {
  provider: string;
  baseUrl: string;
  apiKey?: string | undefined;
}

export function cohereHeaders(cfg: CohereApiConfig): Record<string, string> {
  return cfg.apiKey ? { authorization: `Bearer ${cfg.apiKey}` } : {};
}

export const cohereUrls = {
  embed: (cfg: CohereApiConfig) => `${cfg.baseUrl.replace(/\/$/, "")}/v2/embed`,
};
