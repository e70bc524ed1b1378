// Mistral's catalogue entries (la Plateforme list prices, 2025, USD).
import type { ModelEntryInput } from "../catalogue.ts";

export const mistralModels: readonly ModelEntryInput[] = [
  {
    id: "mistral-large-latest", provider: "mistral", category: "text", also: ["translation"], tier: "large",
    capabilities: { streaming: true, tools: true, max_input_tokens: 131072 },
    pricing: { unit: "1M tokens", input_usd_per_unit: 2.0, output_usd_per_unit: 6.0 },
  },
  {
    id: "mistral-small-latest", provider: "mistral", category: "text", also: ["vision", "translation"], tier: "small",
    capabilities: { streaming: true, tools: true, max_input_tokens: 131072 },
    pricing: { unit: "1M tokens", input_usd_per_unit: 0.1, output_usd_per_unit: 0.3 },
  },
  {
    id: "mistral-embed", provider: "mistral", category: "embedding", tier: "small",
    capabilities: { dimensions: 1024, max_input_tokens: 8192 },
    pricing: { unit: "1M tokens", usd_per_unit: 0.1 },
  },
];
