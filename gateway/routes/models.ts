// GET /v1/models?category= (docs/api/models-and-routing.md): any valid
// API key whatever its scopes, or a session. `available` reflects configured
// providers and open circuit breakers at the time of the call.
import { z } from "zod";
import { capabilitiesSchema, categorySchema, pricingSchema, tierSchema, type Category } from "../../providers/catalogue.ts";
import type { Router } from "../../providers/router.ts";
import { defineRoute, json, type Scope } from "../route.ts";

/**
 * The catalogue category each API key scope names. A client holding a key
 * scoped `images` asks `?category=images` as readily as `image`, and each of
 * these names one category, so both spellings are taken. `agents` names none
 * (an agent turn runs on text models): refused, with that said.
 */
const categoryOfScope = {
  chat: "text",
  images: "image",
  vision: "vision",
  audio: "audio",
  video: "video",
  embeddings: "embedding",
  translation: "translation",
  agents: undefined,
} as const satisfies Record<Scope, Category | undefined>;

const categories = categorySchema.options;
const scopeSpellings = Object.entries(categoryOfScope).flatMap(([scope, category]): [string, Category][] =>
  category !== undefined && !(categories as readonly string[]).includes(scope) ? [[scope, category]] : [],
);
const categoryNames = new Map<string, Category>([...categories.map((c): [string, Category] => [c, c]), ...scopeSpellings]);

function categoryError(input: unknown): string {
  const spellings = scopeSpellings.map(([scope, category]) => `${scope} for ${category}`).join(", ");
  const agents = input === "agents" ? "; agents is a key scope, not a category: agent turns run on text models (category=text)" : "";
  return `${JSON.stringify(input)} is not a category; categories: ${categories.join(", ")} (the key scope names ${spellings} are taken too)${agents}`;
}

// `?category=` (empty, as an HTML form or a client joining optional params
// sends it) means no filter, as omitting it does; before, it was a 400.
const categoryParam = z
  .enum(["", ...categoryNames.keys()] as [string, ...string[]], { error: (issue) => categoryError(issue.input) })
  .transform((name) => categoryNames.get(name))
  .describe(`a category (${categories.join(", ")}), or a key scope naming one (${scopeSpellings.map(([s]) => s).join(", ")}); empty: all`);
const modelsQuery = z.object({ category: categoryParam.optional() }).strict();

export const modelListingSchema = z.object({
  id: z.string().describe("what requests put in `model`"),
  provider: z.string(),
  category: categorySchema,
  tier: tierSchema,
  available: z.boolean().describe("false when the provider is not configured or its circuit breaker is open"),
  capabilities: capabilitiesSchema,
  pricing: pricingSchema,
});

export function modelRoutes(deps: { router: Router }) {
  return [
    defineRoute({
      method: "get",
      path: "/v1/models",
      summary: "The model catalogue, optionally filtered by category",
      tag: "models",
      auth: "any",
      query: modelsQuery,
      responses: { 200: z.object({ data: z.array(modelListingSchema) }) },
      handler: async (ctx) => json(200, { data: deps.router.listModels(ctx.query.category) }),
    }),
  ];
}
