// POST /openai/v1/embeddings: OpenAI's request onto Troupe's embedding
// router, billed like POST /v1/embeddings. `encoding_format: "base64"` (what
// the Node SDK asks for unless told otherwise) is each vector as
// little-endian float32 bytes in base64, which the SDK decodes.
import { z } from "zod";
import { countTokens } from "../../../providers/tokens.ts";
import { routingStrategySchema } from "../../../providers/types.ts";
import { estimateNanos, runBilled } from "../../billed-call.ts";
import { defineRoute, json } from "../../route.ts";
import { usageContextOf, type AiRouteDeps } from "../../usage-context.ts";
import { openAiDialect } from "./errors.ts";
import { modelNameSchema, resolveModel } from "./model-name.ts";

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
  return [
    defineRoute({
      method: "post",
      path: "/openai/v1/embeddings",
      summary: "OpenAI-compatible embeddings (float or base64 encoding)",
      tag: "OpenAI-compatible",
      auth: "api_key",
      scope: "embeddings",
      body: openAiEmbeddingRequestSchema.extend({ model: modelNameSchema(deps.router.catalogue, { category: "embedding" }) }),
      responses: { 200: embeddingResponseSchema },
      dialect: openAiDialect,
      errors: ["not_found", "budget_exceeded", "provider_error", "no_provider_available", "provider_timeout"],
      handler: async (ctx) => {
        const body = ctx.body;
        const input = typeof body.input === "string" ? [body.input] : body.input;
        const routed = resolveModel(deps.router.catalogue, body.model, { category: "embedding", dimensions: body.dimensions }, body.routing_strategy);
        const estimate = () => estimateNanos(deps.router.catalogue, "embedding", routed.model, { input_tokens: input.reduce((n, text) => n + countTokens(text), 0) });
        const r = await runBilled(
          deps,
          usageContextOf(ctx),
          "embeddings",
          estimate,
          () => deps.router.embed({ ...routed, input, dimensions: body.dimensions }, { signal: ctx.signal }),
          (result) => result,
        );
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
