// GET /v1/models?category= (docs/api/models-and-routing.md): any valid
// API key whatever its scopes, or a session. `available` reflects configured
// providers and open circuit breakers at the time of the call.
import { z } from "zod";
import { capabilitiesSchema, categorySchema, pricingSchema, tierSchema } from "../../providers/catalogue.ts";
import type { Router } from "../../providers/router.ts";
import { defineRoute, json } from "../route.ts";

// `?category=` (empty, as an HTML form or a client joining optional params
// sends it) means no filter, as omitting it does; before, it was a 400.
const modelsQuery = z.object({ category: z.union([categorySchema, z.literal("")]).optional() }).strict();

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
      handler: async (ctx) => json(200, { data: deps.router.listModels(ctx.query.category || undefined) }),
    }),
  ];
}
