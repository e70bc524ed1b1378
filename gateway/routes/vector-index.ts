// POST /v1/embeddings/index and /v1/embeddings/search (docs/api/embeddings-and-vector-index.md): the
// organization-scoped index, always embedded with the one configured index
// model (routing manual), so every vector in it has one dimension.
import { z } from "zod";
import type { OnEmbedded, OrgIndex } from "../../vectors/org-index.ts";
import type { UsageMeter } from "../../providers/usage.ts";
import type { AuthContext } from "../auth-context.ts";
import { usageContextOf } from "../usage-context.ts";
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

/** `usage` bills the embedding call of each add and search to the calling key (absent: not billed). */
export function vectorIndexRoutes(deps: { index: OrgIndex; usage?: UsageMeter }) {
  const billTo = (ctx: { auth: AuthContext; requestId: string }): OnEmbedded | undefined => {
    const meter = deps.usage;
    if (!meter) return undefined;
    return (usage) => meter.record(usageContextOf(ctx), "embeddings", usage);
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
      errors: ["quota_exceeded", "service_unavailable", "provider_error"],
      handler: async (ctx) => json(200, await deps.index.add(ctx.auth.key.organization_id, ctx.body.content, ctx.body.metadata, ctx.signal, billTo(ctx))),
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
      errors: ["service_unavailable", "provider_error"],
      handler: async (ctx) => json(200, { results: await deps.index.search(ctx.auth.key.organization_id, ctx.body.query, ctx.body.top_k, undefined, ctx.signal, billTo(ctx)) }),
    }),
  ];
}
