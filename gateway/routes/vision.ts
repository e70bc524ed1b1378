// POST /v1/vision/analyze (docs/api/chat.md#vision): the image goes to a
// multimodal model in its provider's own image format.
import { z } from "zod";
import { modelIdSchema, withModel } from "../../providers/catalogue.ts";
import { analyzeImage, visionRequestSchema } from "../../providers/vision.ts";
import { defineRoute, json } from "../route.ts";
import { countTokens } from "../../providers/tokens.ts";
import { generationEstimateNanos } from "../billed-call.ts";
import type { AiRouteDeps } from "../usage-context.ts";

export const visionResponseSchema = z.object({
  content: z.string(),
  model: z.string(),
  provider: z.string(),
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
});

export function visionRoutes(deps: AiRouteDeps) {
  const body = withModel(visionRequestSchema, modelIdSchema(deps.router.catalogue, { category: "vision" }).nullable().optional());
  return [
    defineRoute({
      method: "post",
      path: "/v1/vision/analyze",
      summary: "Answer a prompt about an image (URL or data: URL)",
      tag: "vision",
      auth: "api_key",
      scope: "vision",
      body,
      responses: { 200: visionResponseSchema },
      errors: ["budget_exceeded", "provider_error", "no_provider_available", "provider_timeout"],
      billing: {
        admit: "reserve",
        via: deps,
        category: "vision",
        // The prompt plus one image (85 tokens, as counted for chat); the output: max_tokens, else the model's most.
        estimate: (ctx) => generationEstimateNanos(deps.router.catalogue, "vision", ctx.body.model, countTokens(ctx.body.prompt) + 85, ctx.body.max_tokens),
      },
      handler: async (ctx) => {
        const r = await analyzeImage(deps.router, ctx.body, { signal: ctx.signal });
        await ctx.bill(r);
        const { byok: _byok, ...answer } = r;
        return json(200, answer);
      },
    }),
  ];
}
