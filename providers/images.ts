// Image generation (docs/api/media.md): `n` (1–4) and `size` are checked against the
// model's catalogue capabilities before any provider call; a model that
// makes fewer images per call than asked is called several times in
// parallel (one attempt: all calls succeed or the attempt fails and the
// router retries or falls back).
import { z } from "zod";
import type { Catalogue, ModelEntry } from "./catalogue.ts";
import { ProviderCallError } from "./errors.ts";
import type { ProviderImage } from "./media-types.ts";
import type { CallContext, Router } from "./router.ts";
import { routingStrategySchema } from "./types.ts";

export const imageRequestSchema = z
  .object({
    prompt: z.string().min(1).max(4000),
    model: z.string().min(1).nullable().optional(),
    routing_strategy: routingStrategySchema.default("auto"),
    size: z
      .string()
      .regex(/^[1-9]\d{1,4}x[1-9]\d{1,4}$/, "<width>x<height>, e.g. 1024x1024")
      .default("1024x1024"),
    n: z.number().int().min(1).max(4).default(1),
  })
  .strict();
export type ImageBody = z.infer<typeof imageRequestSchema>;

/**
 * `size` as the route documents and checks it: the sizes some catalogue
 * model makes (an enum). Whether the chosen model makes it is checked when
 * the model is chosen (a 400 listing that model's sizes).
 */
export function imageSizeSchema(catalogue: Catalogue) {
  const sizes = [...new Set(catalogue.models.flatMap((m) => m.capabilities.sizes ?? []))];
  return z
    .enum(sizes as [string, ...string[]], {
      error: (issue) => `no model makes ${JSON.stringify(issue.input)} images; GET /v1/models?category=image lists each model's sizes`,
    })
    .default("1024x1024");
}

export interface ImagesOutcome {
  images: ProviderImage[];
  model: string;
  provider: string;
  width: number;
  height: number;
}

function imageProblem(size: string, n: number) {
  return (m: ModelEntry): string | undefined => {
    const sizes = m.capabilities.sizes ?? [];
    if (!sizes.includes(size)) return `model ${m.id} does not make ${size} images; its sizes: ${sizes.join(", ")}`;
    const max = m.capabilities.n_max ?? 1;
    if (n > max) return `model ${m.id} makes at most ${max} image${max === 1 ? "" : "s"} per request`;
    return undefined;
  };
}

/** n split into calls of at most perCall images. */
export function splitCalls(n: number, perCall: number): number[] {
  const calls: number[] = [];
  for (let left = n; left > 0; left -= perCall) calls.push(Math.min(perCall, left));
  return calls;
}

export async function generateImages(router: Router, req: ImageBody, ctx: CallContext = {}): Promise<ImagesOutcome> {
  const [width, height] = req.size.split("x").map(Number) as [number, number];
  const candidates = router.plan(req.model, req.routing_strategy, { category: "image", media: imageProblem(req.size, req.n) });
  const deadline = router.startDeadline(ctx.signal);
  try {
    const { value, entry } = await router.attempts(candidates, deadline, async (entry, adapter, signal) => {
      const perCall = entry.capabilities.images_per_call ?? 1;
      const batches = await Promise.all(
        splitCalls(req.n, perCall).map((count) =>
          adapter.generateImages!({ model: entry.upstream_model ?? entry.id, prompt: req.prompt, width, height, n: count }, { signal }),
        ),
      );
      const images = batches.flat();
      if (images.length < req.n) throw new ProviderCallError(entry.provider, "protocol", `${entry.provider} returned ${images.length} of ${req.n} images`);
      return images;
    });
    return { images: value.slice(0, req.n), model: entry.id, provider: entry.provider, width, height };
  } finally {
    deadline.dispose();
  }
}
