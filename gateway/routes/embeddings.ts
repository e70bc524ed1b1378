// POST /v1/embeddings (docs/api/embeddings-and-vector-index.md): batches of texts, routed like chat.
// (/v1/embeddings/index and /search live with the vector index work.)
import { z } from "zod";
import { modelIdSchema, withModel } from "../../providers/catalogue.ts";
import { embeddingDimensionRules } from "../../providers/model-rules.ts";
import { embeddingRequestSchema } from "../../providers/types.ts";
import { defineRoute, json } from "../route.ts";
import { countTokens } from "../../providers/tokens.ts";
import { estimateNanos, runBilled } from "../billed-call.ts";
import { usageContextOf, type AiRouteDeps } from "../usage-context.ts";

export const embeddingResponseSchema = z.object({
  embeddings: z.array(z.array(z.number())),
  dimensions: z.number().int(),
  model: z.string(),
  provider: z.string(),
});

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
      handler: async (ctx) => {
        const input = typeof ctx.body.input === "string" ? [ctx.body.input] : ctx.body.input;
        const estimate = () => estimateNanos(deps.router.catalogue, "embedding", ctx.body.model, { input_tokens: input.reduce((n, text) => n + countTokens(text), 0) });
        const r = await runBilled(
          deps,
          usageContextOf(ctx),
          "embeddings",
          estimate,
          () => deps.router.embed({ model: ctx.body.model, routing_strategy: ctx.body.routing_strategy, input, dimensions: ctx.body.dimensions }, { signal: ctx.signal }),
          (result) => result,
        );
        return json(200, { embeddings: r.embeddings, dimensions: r.dimensions, model: r.model, provider: r.provider });
      },
    }),
  ];
}
