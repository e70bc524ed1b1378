// Any server speaking OpenAI's chat API (Mistral, Groq, DeepSeek, Together,
// Ollama, vLLM…): the OpenAI adapter under the endpoint's own name. Declared
// in config as OPENAI_COMPATIBLE_ENDPOINTS=[{name, base_url, api_key?, models}].
import type { UpstreamClient } from "../upstream-request.ts";
import type { ProviderAdapter } from "../types.ts";
import { createOpenAIAdapter } from "../openai/index.ts";

export interface CompatibleEndpoint {
  name: string;
  base_url: string;
  api_key?: string | undefined;
  models: readonly string[];
}

export function createCompatibleAdapter(endpoint: CompatibleEndpoint, client?: UpstreamClient): ProviderAdapter {
  return createOpenAIAdapter({
    provider: endpoint.name,
    baseUrl: endpoint.base_url,
    apiKey: endpoint.api_key,
    maxTokensField: "max_tokens",
    ...(client ? { client } : {}),
  });
}

/** Catalogue id of a model served by an openai-compatible endpoint. */
export function compatibleModelId(endpoint: string, model: string): string {
  return `${endpoint}/${model}`;
}
