// POST /openai/v1/embeddings: OpenAI's request onto Troupe's embedding
// router, billed like POST /v1/embeddings. `encoding_format: "base64"` (what
// the Node SDK asks for unless told otherwise) is each vector as
// little-endian float32 bytes in base64, which the SDK decodes.
import { z } from "zod";
import { countTokens } from "../../../providers/tokens.ts";
import { routingStrategySchema } from "../../../providers/types.ts";
import { estimateNanos } from "../../billed-call.ts";
import { defineRoute, json } from "../../route.ts";
import type { AiRouteDeps } from "../../usage-context.ts";
import { modelNameSchema, resolveModel } from "./model-name.ts";
import { modelCallErrors, openAiMount } from "./mount.ts";

export const openAiEmbeddingRequestSchema = z
  .object({
    model: z.string().min(1),
    // Token-id arrays (OpenAI also takes them) are refused: Troupe's providers take text.
    input: z.union([z.string().min(1), z.array(z.string().min(1)).min(1).max(2048)]),
    encoding_format: z.enum(["float", "base64"]).optional(),
    dimensions: z.number().int().min(1).max(8192).optional(),
    user: z.string().optional(),
    routing_strategy: routingStrategySchema.optional(),
  })
  .strict();

const embeddingResponseSchema = z.object({
  object: z.literal("list"),
  data: z.array(
    z.object({
      object: z.literal("embedding"),
      index: z.number().int(),
      embedding: z.union([z.array(z.number()), z.string().describe("little-endian float32 values, base64")]),
    }),
  ),
  model: z.string(),
  usage: z.object({ prompt_tokens: z.number().int(), total_tokens: z.number().int() }),
});

/** Little-endian float32, as OpenAI encodes (and its SDKs decode) base64 embeddings. */
export function toBase64Float32(vector: readonly number[]): string {
  const bytes = Buffer.alloc(vector.length * 4);
  vector.forEach((v, i) => bytes.writeFloatLE(v, i * 4));
  return bytes.toString("base64");
}

export function openAiEmbeddingRoutes(deps: AiRouteDeps) {
  /** The texts and the routed model (404 for a model the catalogue does not know). */
  const embeddingOf = (body: z.output<typeof openAiEmbeddingRequestSchema>) => ({
    input: typeof body.input === "string" ? [body.input] : body.input,
    routed: resolveModel(deps.router.catalogue, body.model, { category: "embedding", dimensions: body.dimensions }, body.routing_strategy),
  });
  return [
    defineRoute({
      method: "post",
      path: "/openai/v1/embeddings",
      summary: "OpenAI-compatible embeddings (float or base64 encoding)",
      ...openAiMount,
      scope: "embeddings",
      body: openAiEmbeddingRequestSchema.extend({ model: modelNameSchema(deps.router.catalogue, { category: "embedding" }) }),
      responses: { 200: embeddingResponseSchema },
      errors: modelCallErrors,
      billing: {
        admit: "reserve",
        via: deps,
        category: "embeddings",
        estimate: (ctx) => {
          const { routed, input } = embeddingOf(ctx.body);
          return estimateNanos(deps.router.catalogue, "embedding", routed.model, { input_tokens: input.reduce((n, text) => n + countTokens(text), 0) });
        },
      },
      handler: async (ctx) => {
        const body = ctx.body;
        const { routed, input } = embeddingOf(body);
        const r = await deps.router.embed({ ...routed, input, dimensions: body.dimensions }, { signal: ctx.signal });
        await ctx.bill(r);
        const base64 = body.encoding_format === "base64";
        return json(200, {
          object: "list",
          data: r.embeddings.map((v, index) => ({ object: "embedding", index, embedding: base64 ? toBase64Float32(v) : v })),
          model: r.model,
          usage: { prompt_tokens: r.input_tokens, total_tokens: r.input_tokens },
        });
      },
    }),
  ];
}
