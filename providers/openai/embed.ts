// OpenAI /v1/embeddings (also spoken by most openai-compatible servers).
import { z } from "zod";
import type { CallOptions, EmbedRequest, EmbedResult } from "../types.ts";
import { sendForJson, type UpstreamClient } from "../upstream-request.ts";
import { openaiHeaders, openaiUrls, type OpenAIApiConfig } from "./api.ts";
import { parseUpstream } from "../parse-upstream.ts";

const responseSchema = z.object({
  data: z.array(z.object({ index: z.number().int(), embedding: z.array(z.number()) })),
  model: z.string().optional(),
  usage: z.object({ prompt_tokens: z.number().int() }).passthrough().optional(),
});

export async function openaiEmbed(
  cfg: OpenAIApiConfig,
  client: UpstreamClient,
  req: EmbedRequest,
  opts: CallOptions,
): Promise<EmbedResult> {
  const payload: Record<string, unknown> = { model: req.model, input: req.input };
  if (cfg.dialect?.embedOptions !== false) {
    payload.encoding_format = "float";
    if (req.dimensions != null) payload.dimensions = req.dimensions;
  }
  const answer = await sendForJson(cfg.provider, client, openaiUrls.embeddings(cfg, req.model), {
    headers: openaiHeaders(cfg),
    body: payload,
    signal: opts.signal,
  });
  const data = parseUpstream(cfg.provider, responseSchema, answer);
  const embeddings = [...data.data].sort((a, b) => a.index - b.index).map((d) => d.embedding);
  return {
    embeddings,
    dimensions: embeddings[0]?.length ?? 0,
    model: req.model,
    provider: cfg.provider,
    input_tokens: data.usage?.prompt_tokens ?? 0,
  };
}
