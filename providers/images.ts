// Image generation (docs/api/media.md): `n` (1–4) and `size` are checked against the
// model's catalogue capabilities before any provider call; a model that
// makes fewer images per call than asked is called several times in
// parallel (one attempt: all calls succeed or the attempt fails and the
// router retries or falls back).
import { z } from "zod";
import type { Catalogue, FieldNeed, ModelEntry, ModelListing } from "./catalogue.ts";
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
 * the model is chosen (a 400 listing that model's sizes). `available`: the
 * models that could serve now, whose sizes a refusal lists.
 */
export function imageSizeSchema(catalogue: Catalogue, available: () => readonly ModelListing[] = () => []) {
  const sizes = [...new Set(catalogue.models.flatMap((m) => m.capabilities.sizes ?? []))];
  return z
    .enum(sizes as [string, ...string[]], {
      error: (issue) => {
        const now = [...new Set(available().flatMap((m) => m.capabilities.sizes ?? []))];
        const listed = now.length > 0 ? `; sizes of the models available now: ${now.join(", ")}` : "";
        return `no model makes ${JSON.stringify(issue.input)} images${listed}; GET /v1/models?category=image lists each model's sizes`;
      },
    })
    .default("1024x1024");
}

export interface ImagesOutcome {
  images: ProviderImage[];
  model: string;
  provider: string;
  width: number;
  height: number;
  /** The organization's own key served it (billed at the BYOK price). */
  byok?: true | undefined;
}

/** `size` and `n` as fields the chosen model must take: a 400 naming the field and what would do. */
function imageNeeds(size: string, n: number): FieldNeed[] {
  const nMax = (m: ModelEntry) => m.capabilities.n_max ?? 1;
  return [
    {
      path: "body.size",
      asked: `the size ${size}`,
      problem: (m) => {
        const sizes = m.capabilities.sizes ?? [];
        return sizes.includes(size) ? undefined : `model ${m.id} does not make ${size} images; its sizes: ${sizes.join(", ")}`;
      },
      offers: { noun: "sizes", values: (m) => m.capabilities.sizes ?? [] },
    },
    {
      path: "body.n",
      asked: `${n} images per request`,
      problem: (m) => (n > nMax(m) ? `model ${m.id} makes at most ${nMax(m)} image${nMax(m) === 1 ? "" : "s"} per request` : undefined),
      offers: { noun: "n", values: (m) => Array.from({ length: nMax(m) }, (_, i) => String(i + 1)) },
    },
  ];
}

/** n split into calls of at most perCall images. */
export function splitCalls(n: number, perCall: number): number[] {
  const calls: number[] = [];
  for (let left = n; left > 0; left -= perCall) calls.push(Math.min(perCall, left));
  return calls;
}

export async function generateImages(router: Router, req: ImageBody, ctx: CallContext = {}): Promise<ImagesOutcome> {
  const [width, height] = req.size.split("x").map(Number) as [number, number];
  const candidates = router.plan(req.model, req.routing_strategy, { category: "image", fields: imageNeeds(req.size, req.n) });
  const { value, entry, byok } = await router.routeCall(candidates, ctx.signal, async (entry, adapter, signal) => {
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
  return { images: value.slice(0, req.n), model: entry.id, provider: entry.provider, width, height, ...(byok ? { byok } : {}) };
}
