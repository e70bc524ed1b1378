// POST /v1/embeddings/index and /v1/embeddings/search (docs/api/embeddings-and-vector-index.md): the
// organization-scoped index, always embedded with the one configured index
// model (routing manual), so every vector in it has one dimension.
import { z } from "zod";
import type { EmbeddingUsage, OrgIndex } from "../../vectors/org-index.ts";
import type { Catalogue } from "../../providers/catalogue.ts";
import { countTokens } from "../../providers/tokens.ts";
import { estimateNanos } from "../billed-call.ts";
import type { BillingServices } from "../route-billing.ts";
import { MAX_CONTENT_CHARS } from "../../vectors/org-index.ts";
import { text } from "../../core/text-schema.ts";
import { MAX_TOP_K } from "../../vectors/vector-index.ts";
import { defineRoute, json } from "../route.ts";

const indexBody = z
  .object({
    content: text({ min: 1, max: MAX_CONTENT_CHARS, nonBlank: true }),
    metadata: z.record(z.string(), z.unknown()).default({}),
  })
  .strict();

const searchBody = z
  .object({
    query: text({ min: 1, max: MAX_CONTENT_CHARS, nonBlank: true }),
    top_k: z.number().int().min(1).max(MAX_TOP_K).default(5),
  })
  .strict();

const recordSchema = z.object({
  id: z.string(),
  content: z.string(),
  metadata: z.record(z.string(), z.unknown()),
  model: z.string(),
  distance: z.number(),
});

/**
 * Each add and search is one billed embedding call of the calling key, held
 * to its project's hard limit like POST /v1/embeddings: reserved at the index
 * model's price for the text before the call (402 before any provider call),
 * settled at its real figures before the answer.
 */
export function vectorIndexRoutes(deps: BillingServices & { index: OrgIndex; catalogue: Catalogue }) {
  const billing = (textOf: (body: { content?: string; query?: string }) => string) => ({
    admit: "reserve" as const,
    via: deps,
    category: "embeddings" as const,
    estimate: (ctx: { body: { content?: string; query?: string } }) => estimateNanos(deps.catalogue, "embedding", deps.index.model, { input_tokens: countTokens(textOf(ctx.body)) }),
  });
  /** Runs an embedding call whose usage arrives through a callback, then waits for its settle (the next call sees it spent). */
  const billed = async <T>(bill: (usage: EmbeddingUsage) => void | Promise<void>, run: (onUsage: (usage: EmbeddingUsage) => void) => Promise<T>): Promise<T> => {
    let settled: void | Promise<void> = undefined;
    const result = await run((usage) => {
      settled = bill(usage);
    });
    await settled;
    return result;
  };
  return [
    defineRoute({
      method: "post",
      path: "/v1/embeddings/index",
      summary: "Embed a passage with the index model and store it in the organization's vector index",
      tag: "embeddings",
      auth: "api_key",
      scope: "embeddings",
      body: indexBody,
      // `model`: the index's embedding model (gateway/index-model.ts), the same for every record of the index.
      responses: { 200: z.object({ id: z.string(), model: z.string() }) },
      // Size and depth caps (400 naming content or metadata) and the organization's quota (403): vectors/vector-index.ts.
      errors: ["budget_exceeded", "quota_exceeded", "service_unavailable", "provider_error"],
      billing: billing((body) => body.content ?? ""),
      handler: async (ctx) => json(200, await billed((usage) => ctx.bill(usage), (onUsage) => deps.index.add(ctx.auth.key.organization_id, ctx.body.content, ctx.body.metadata, ctx.signal, onUsage))),
    }),
    defineRoute({
      method: "post",
      path: "/v1/embeddings/search",
      summary: "The organization's records closest to a query, ascending cosine distance",
      tag: "embeddings",
      auth: "api_key",
      scope: "embeddings",
      body: searchBody,
      responses: { 200: z.object({ results: z.array(recordSchema) }) },
      errors: ["budget_exceeded", "service_unavailable", "provider_error"],
      billing: billing((body) => body.query ?? ""),
      handler: async (ctx) => json(200, { results: await billed((usage) => ctx.bill(usage), (onUsage) => deps.index.search(ctx.auth.key.organization_id, ctx.body.query, ctx.body.top_k, undefined, ctx.signal, onUsage)) }),
    }),
  ];
}
