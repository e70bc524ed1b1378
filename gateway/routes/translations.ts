// POST /v1/translations (docs/api/chat.md#translation): a fixed instruction on a
// chat model of category `translation`.
import { z } from "zod";
import { modelIdSchema, withModel } from "../../providers/catalogue.ts";
import { translate, translationRequestSchema } from "../../providers/translation.ts";
import { defineRoute, json } from "../route.ts";
import { countTokens } from "../../providers/tokens.ts";
import { generationEstimateNanos } from "../billed-call.ts";
import type { AiRouteDeps } from "../usage-context.ts";

export const translationResponseSchema = z.object({
  text: z.string(),
  source_language: z.string().nullable(),
  target_language: z.string(),
  model: z.string(),
  provider: z.string(),
});

export function translationRoutes(deps: AiRouteDeps) {
  const body = withModel(translationRequestSchema, modelIdSchema(deps.router.catalogue, { category: "translation" }).nullable().optional());
  return [
    defineRoute({
      method: "post",
      path: "/v1/translations",
      summary: "Translate text into a target language",
      tag: "translation",
      auth: "api_key",
      scope: "translation",
      body,
      responses: { 200: translationResponseSchema },
      errors: ["budget_exceeded", "provider_error", "no_provider_available", "provider_timeout"],
      billing: {
        admit: "reserve",
        via: deps,
        category: "translation",
        // A translation has no max_tokens and its output may outgrow its input (into another script): the model's most is reserved.
        estimate: (ctx) => generationEstimateNanos(deps.router.catalogue, "translation", ctx.body.model, countTokens(ctx.body.text), null),
      },
      handler: async (ctx) => {
        const r = await translate(deps.router, ctx.body, { signal: ctx.signal });
        await ctx.bill(r);
        return json(200, { text: r.text, source_language: r.source_language, target_language: r.target_language, model: r.model, provider: r.provider });
      },
    }),
  ];
}
