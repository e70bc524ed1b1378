// Azure OpenAI: OpenAI's chat and embeddings wire format behind per-deployment
// URLs — {endpoint}/openai/deployments/{deployment}/chat/completions (and
// /embeddings) ?api-version=…, authenticated by an `api-key` header. The
// OpenAI adapter does the mapping; this folder only supplies that dialect.
import { z } from "zod";
import { optionalString } from "../../core/env.ts";
import { defineProvider } from "../descriptor.ts";
import { createOpenAIChatAndEmbeddings } from "../openai/index.ts";
import { trimSlash } from "../openai/api.ts";
import type { ProviderAdapter } from "../types.ts";
import type { UpstreamClient } from "../upstream-request.ts";
import { deploymentFor, deploymentsSetting } from "./deployments.ts";
import { azureModels } from "./models.ts";

export interface AzureOpenAIOptions {
  /** The resource's endpoint, e.g. https://my-resource.openai.azure.com. */
  endpoint: string;
  apiKey: string;
  apiVersion: string;
  /** Model (the catalogue's upstream_model) → deployment name. */
  deployments: Readonly<Record<string, string>>;
  client?: UpstreamClient | undefined;
}

export function azureUrl(opts: Pick<AzureOpenAIOptions, "endpoint" | "apiVersion" | "deployments">, kind: "chat" | "embeddings", model: string): string {
  const deployment = encodeURIComponent(deploymentFor(opts.deployments, model));
  const path = kind === "chat" ? "chat/completions" : "embeddings";
  return `${trimSlash(opts.endpoint)}/openai/deployments/${deployment}/${path}?api-version=${encodeURIComponent(opts.apiVersion)}`;
}

export function createAzureOpenAIAdapter(opts: AzureOpenAIOptions): ProviderAdapter {
  // Chat and embeddings only: Azure's audio and image APIs are not wired.
  return createOpenAIChatAndEmbeddings({
    provider: "azure",
    baseUrl: opts.endpoint,
    apiKey: opts.apiKey,
    // Accepted by every GA api-version and every chat deployment (max_completion_tokens is newer).
    maxTokensField: "max_tokens",
    dialect: { url: (kind, model) => azureUrl(opts, kind, model), headers: () => ({ "api-key": opts.apiKey }) },
    client: opts.client,
  });
}

export const descriptor = defineProvider({
  name: "azure",
  title: "Azure OpenAI",
  key: "azure",
  env: {
    AZURE_OPENAI_API_KEY: optionalString,
    /** The resource's endpoint, https://{resource}.openai.azure.com; needed with the key. */
    AZURE_OPENAI_ENDPOINT: optionalString.pipe(z.url().optional()),
    AZURE_OPENAI_API_VERSION: z.string().regex(/^\d{4}-\d{2}-\d{2}(-preview)?$/, "YYYY-MM-DD or YYYY-MM-DD-preview").default("2024-10-21"),
    /** Model → deployment: {"gpt-4o": "prod-4o"} or gpt-4o=prod-4o,…; unlisted models use a deployment named like the model. */
    AZURE_OPENAI_DEPLOYMENTS: deploymentsSetting,
  },
  secretEnv: ["AZURE_OPENAI_API_KEY"],
  settings: (e) => {
    if (e.AZURE_OPENAI_API_KEY && !e.AZURE_OPENAI_ENDPOINT) {
      throw new Error("Invalid configuration: AZURE_OPENAI_API_KEY needs AZURE_OPENAI_ENDPOINT (https://{resource}.openai.azure.com)");
    }
    return { apiKey: e.AZURE_OPENAI_API_KEY, endpoint: e.AZURE_OPENAI_ENDPOINT, apiVersion: e.AZURE_OPENAI_API_VERSION, deployments: e.AZURE_OPENAI_DEPLOYMENTS };
  },
  create: (s, deps) =>
    s.apiKey && s.endpoint
      ? [createAzureOpenAIAdapter({ endpoint: s.endpoint, apiKey: s.apiKey, apiVersion: s.apiVersion, deployments: s.deployments, client: deps.client })]
      : [],
  models: azureModels,
});
