// POST /v1/embeddings (docs/api/embeddings-and-vector-index.md): batches of texts, routed like chat.
// (/v1/embeddings/index and /search live with the vector index work.)
import { z } from "zod";
import { modelIdSchema, withModel } from "../../providers/catalogue.ts";
import { embeddingDimensionRules } from "../../providers/model-rules.ts";
import { embeddingRequestSchema } from "../../providers/types.ts";
import { defineRoute, json } from "../route.ts";
import { countTokens } from "../../providers/tokens.ts";
import { estimateNanos } from "../billed-call.ts";
import type { AiRouteDeps } from "../usage-context.ts";

export const embeddingResponseSchema = z.object({
  embeddings: z.array(z.array(z.number())),
  dimensions: z.number().int(),
  model: z.string(),
  provider: z.string(),
});

const inputsOf = (body: { input: string | string[] }): string[] => (typeof body.input === "string" ? [body.input] : body.input);

export function embeddingRoutes(deps: AiRouteDeps) {
  const body = withModel(embeddingRequestSchema, modelIdSchema(deps.router.catalogue, { category: "embedding" }).nullable().optional(), embeddingDimensionRules(deps.router.catalogue));
  return [
    defineRoute({
      method: "post",
      path: "/v1/embeddings",
      summary: "Embed one or more texts",
      tag: "embeddings",
      auth: "api_key",
      scope: "embeddings",
      body,
      responses: { 200: embeddingResponseSchema },
      errors: ["budget_exceeded", "provider_error", "no_provider_available", "provider_timeout"],
      billing: {
        admit: "reserve",
        via: deps,
        category: "embeddings",
        estimate: (ctx) => estimateNanos(deps.router.catalogue, "embedding", ctx.body.model, { input_tokens: inputsOf(ctx.body).reduce((n, text) => n + countTokens(text), 0) }),
      },
      handler: async (ctx) => {
        const r = await deps.router.embed({ model: ctx.body.model, routing_strategy: ctx.body.routing_strategy, input: inputsOf(ctx.body), dimensions: ctx.body.dimensions }, { signal: ctx.signal });
        await ctx.bill(r);
        return json(200, { embeddings: r.embeddings, dimensions: r.dimensions, model: r.model, provider: r.provider });
      },
    }),
  ];
}
