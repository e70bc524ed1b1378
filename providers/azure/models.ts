// Azure OpenAI's catalogue entries (Global Standard list prices, 2025, USD).
// Ids carry the `azure/` prefix (the same models as OpenAI's, routed to a
// different provider); upstream_model is the key of AZURE_OPENAI_DEPLOYMENTS.
import type { ModelEntryInput } from "../catalogue.ts";

export const azureModels: readonly ModelEntryInput[] = [
  {
    id: "azure/gpt-4o", provider: "azure", upstream_model: "gpt-4o", category: "text", also: ["vision", "translation"], tier: "large",
    capabilities: { streaming: true, tools: true, max_input_tokens: 128000 },
    pricing: { unit: "1M tokens", input_usd_per_unit: 2.5, output_usd_per_unit: 10.0 },
  },
  {
    id: "azure/gpt-4o-mini", provider: "azure", upstream_model: "gpt-4o-mini", category: "text", also: ["vision", "translation"], tier: "small",
    capabilities: { streaming: true, tools: true, max_input_tokens: 128000 },
    pricing: { unit: "1M tokens", input_usd_per_unit: 0.15, output_usd_per_unit: 0.6 },
  },
  {
    id: "azure/text-embedding-3-small", provider: "azure", upstream_model: "text-embedding-3-small", category: "embedding", tier: "small",
    capabilities: { dimensions: 1536, custom_dimensions: true, max_input_tokens: 8191 },
    pricing: { unit: "1M tokens", usd_per_unit: 0.02 },
  },
];
