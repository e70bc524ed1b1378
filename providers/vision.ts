// Vision (docs/api/chat.md#vision): one user message carrying the image, sent through
// the chat router to a model of category `vision`; each adapter puts the
// image in its provider's own format.
import { z } from "zod";
import { uriString } from "../core/uri-schema.ts";
import type { CallContext, Router } from "./router.ts";
import { routingStrategySchema, type ImageInput } from "./types.ts";

export const visionRequestSchema = z
  .object({
    image_url: uriString(20_000_000),
    prompt: z.string().min(1).default("Describe this image."),
    model: z.string().min(1).nullable().optional(),
    routing_strategy: routingStrategySchema.default("auto"),
    max_tokens: z.number().int().min(1).max(1_000_000).nullable().optional(),
  })
  .strict();
export type VisionRequest = z.infer<typeof visionRequestSchema>;

export interface VisionResult {
  content: string;
  model: string;
  provider: string;
  input_tokens: number;
  output_tokens: number;
}

/** data: URLs become inline base64 images; anything else is passed as a URL for the provider to fetch. */
export function imageFromUrl(url: string): ImageInput {
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (data) return { media_type: data[1]!, base64: data[2]! };
  return { url };
}

/** `byok`: the organization's own key served it (billed at the BYOK price; not part of the answer). */
export async function analyzeImage(router: Router, req: VisionRequest, ctx: CallContext = {}): Promise<VisionResult & { byok?: true }> {
  const result = await router.chat(
    {
      model: req.model,
      routing_strategy: req.routing_strategy,
      max_tokens: req.max_tokens,
      messages: [{ role: "user", content: req.prompt, images: [imageFromUrl(req.image_url)] }],
    },
    { ...ctx, category: "vision" },
  );
  return {
    content: result.content,
    model: result.model,
    provider: result.provider,
    input_tokens: result.input_tokens,
    output_tokens: result.output_tokens,
    ...(result.extras?.byok ? { byok: true as const } : {}),
  };
}
