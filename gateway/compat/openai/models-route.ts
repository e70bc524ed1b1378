// GET /openai/v1/models and /openai/v1/models/{model}: the whole catalogue,
// every provider's ids, in OpenAI's list shape, plus the troupe/<strategy>
// routing names (model-name.ts) so model pickers offer them. The catalogue
// has no creation dates: `created` is 0.
import { z } from "zod";
import { TroupeError } from "../../../core/errors.ts";
import type { Router } from "../../../providers/router.ts";
import { defineRoute, json } from "../../route.ts";
import type { OpenAiErrorDetails } from "./errors.ts";
import { openAiMount } from "./mount.ts";
import { routingModelNames } from "./model-name.ts";

const modelSchema = z.object({
  id: z.string().describe("what requests put in `model`"),
  object: z.literal("model"),
  created: z.number().int().describe("always 0: the catalogue has no creation dates"),
  owned_by: z.string().describe("the provider, or troupe for the routing names"),
});
type OpenAiModel = z.infer<typeof modelSchema>;

function modelsOf(router: Router): OpenAiModel[] {
  const routing = Object.keys(routingModelNames).map((id): OpenAiModel => ({ id, object: "model", created: 0, owned_by: "troupe" }));
  return [...routing, ...router.catalogue.models.map((m): OpenAiModel => ({ id: m.id, object: "model", created: 0, owned_by: m.provider }))];
}

/** The model OpenAI's SDKs ask for by id, else OpenAI's 404 model_not_found naming the `model` parameter. */
function modelNamed(router: Router, id: string): OpenAiModel {
  const found = modelsOf(router).find((m) => m.id === id);
  if (found) return found;
  const details: OpenAiErrorDetails = { openai_code: "model_not_found", param: "model" };
  throw new TroupeError("not_found", `The model \`${id}\` does not exist`, { details });
}

export function openAiModelRoutes(deps: { router: Router }) {
  return [
    defineRoute({
      ...openAiMount,
      method: "get",
      path: "/openai/v1/models",
      summary: "OpenAI-compatible model list: every catalogue model of every provider, and the troupe/<strategy> routing names",
      responses: { 200: z.object({ object: z.literal("list"), data: z.array(modelSchema) }) },
      handler: async () => json(200, { object: "list", data: modelsOf(deps.router) }),
    }),
    defineRoute({
      ...openAiMount,
      method: "get",
      path: "/openai/v1/models/:model",
      summary: "OpenAI-compatible model lookup (404 model_not_found for an id the catalogue does not know)",
      responses: { 200: modelSchema },
      errors: ["not_found"],
      handler: async (ctx) => json(200, modelNamed(deps.router, ctx.params.model)),
    }),
  ];
}
