// Cohere /v2/embed: input_type is required (search_document for what is
// stored, search_query for queries), embedding_types ["float"], answer in
// embeddings.float.
import { z } from "zod";
import type { CallOptions, EmbedRequest, EmbedResult } from "../types.ts";
import { sendForJson, type UpstreamClient } from "../upstream-request.ts";
import { parseUpstream } from "../parse-upstream.ts";
import { cohereHeaders, cohereUrls, type CohereApiConfig } from "./api.ts";

const responseSchema = z.object({
  embeddings: z.object({ float: z.array(z.array(z.number())) }).passthrough(),
  meta: z
    .object({ billed_units: z.object({ input_tokens: z.number().int().optional() }).passthrough().optional() })
    .passthrough()
    .optional(),
});

export async function cohereEmbed(
  cfg: CohereApiConfig,
  client: UpstreamClient,
  req: EmbedRequest,
  opts: CallOptions,
): Promise<EmbedResult> {
  const payload: Record<string, unknown> = {
    model: req.model,
    texts: req.input,
    input_type: req.input_type ?? "search_document",
    embedding_types: ["float"],
  };
  if (req.dimensions != null) payload.output_dimension = req.dimensions;
  const answer = await sendForJson(cfg.provider, client, cohereUrls.embed(cfg), {
    headers: cohereHeaders(cfg),
    body: payload,
    signal: opts.signal,
  });
  const data = parseUpstream(cfg.provider, responseSchema, answer);
  const embeddings = data.embeddings.float;
  return {
    embeddings,
    dimensions: embeddings[0]?.length ?? 0,
    model: req.model,
    provider: cfg.provider,
    input_tokens: data.meta?.billed_units?.input_tokens ?? 0,
  };
}
