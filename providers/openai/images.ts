// OpenAI /v1/images/generations: dall-e models answer temporary URLs (valid
// about an hour), gpt-image-1 answers base64. Both are re-hosted above the
// router; neither leaves the gateway as is.
import { z } from "zod";
import { ProviderCallError } from "../errors.ts";
import { sendForJson, type UpstreamClient } from "../upstream-request.ts";
import type { ImageGenerationRequest, ProviderImage } from "../media-types.ts";
import type { CallOptions } from "../types.ts";
import { openaiHeaders, trimSlash, type OpenAIApiConfig } from "./api.ts";
import { parseUpstream } from "../parse-upstream.ts";

const responseSchema = z.object({
  data: z.array(z.object({ url: z.string().optional(), b64_json: z.string().optional() }).passthrough()).min(1),
});

export async function openaiImages(cfg: OpenAIApiConfig, client: UpstreamClient, req: ImageGenerationRequest, opts: CallOptions): Promise<ProviderImage[]> {
  const answer = await sendForJson(cfg.provider, client, `${trimSlash(cfg.baseUrl)}/images/generations`, {
    headers: openaiHeaders(cfg),
    body: { model: req.model, prompt: req.prompt, n: req.n, size: `${req.width}x${req.height}` },
    signal: opts.signal,
  });
  const data = parseUpstream(cfg.provider, responseSchema, answer);
  return data.data.map((d): ProviderImage => {
    if (d.b64_json) return { kind: "bytes", bytes: Buffer.from(d.b64_json, "base64"), contentType: "image/png" };
    if (d.url) return { kind: "url", url: d.url };
    throw new ProviderCallError(cfg.provider, "protocol", `${cfg.provider} sent an image with neither url nor b64_json`);
  });
}
