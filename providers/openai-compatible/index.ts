// Any server speaking OpenAI's chat API (Mistral, Groq, DeepSeek, Together,
// Ollama, vLLM…): the OpenAI adapter under the endpoint's own name. Declared
// in config as OPENAI_COMPATIBLE_ENDPOINTS=[{name, base_url, api_key?, models}].
import { z } from "zod";
import type { UpstreamClient } from "../upstream-request.ts";
import type { ProviderAdapter } from "../types.ts";
import { createOpenAIAdapter } from "../openai/index.ts";
import { defineProvider } from "../descriptor.ts";

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

/** One openai-compatible endpoint as OPENAI_COMPATIBLE_ENDPOINTS declares it. */
const endpointSchema = z.object({
  name: z.string().regex(/^[a-z0-9][a-z0-9-]*$/, "lower-case letters, digits and dashes"),
  base_url: z.url(),
  api_key: z.string().optional(),
  models: z.array(z.string().min(1)).min(1),
});

function parseEndpoints(raw: string): z.infer<typeof endpointSchema>[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error("OPENAI_COMPATIBLE_ENDPOINTS must be a JSON array");
  }
  const result = z.array(endpointSchema).safeParse(parsed);
  if (!result.success) throw new Error(`OPENAI_COMPATIBLE_ENDPOINTS: ${z.prettifyError(result.error)}`);
  return result.data;
}

/** One adapter per declared endpoint; their models join the catalogue as `<name>/<model>` (catalogue.ts). */
export const descriptor = defineProvider({
  name: "openai-compatible",
  title: "OpenAI-compatible endpoints",
  key: "openaiCompatible",
  env: {
    /** JSON array of {name, base_url, api_key?, models: [...]}. */
    OPENAI_COMPATIBLE_ENDPOINTS: z.string().default("[]"),
  },
  // It may hold keys, so the chart takes it from a Secret.
  secretEnv: ["OPENAI_COMPATIBLE_ENDPOINTS"],
  settings: (e) => parseEndpoints(e.OPENAI_COMPATIBLE_ENDPOINTS),
  create: (endpoints, deps) => endpoints.map((ep) => createCompatibleAdapter(ep, deps.client)),
});
