// POST /v1/images/generations (docs/api/media.md): every image is re-hosted (bytes,
// base64 or the provider's temporary URL copied into the file store) and
// checked to be a PNG or JPEG of the requested size before the answer; a
// failed copy is a 502 and the request's already stored images are deleted.
// Usage: megapixels, so an image costs by its size.
import { z } from "zod";
import { uriOut } from "../../core/uri-schema.ts";
import { imageInfo } from "../../media/png.ts";
import { rehostAll } from "../../media/rehost.ts";
import { generateImages, imageRequestSchema, imageSizeSchema } from "../../providers/images.ts";
import { defineRoute, json } from "../route.ts";
import { modelIdSchema, withModel } from "../../providers/catalogue.ts";
import { imageRules } from "../../providers/model-rules.ts";
import { estimateNanos } from "../billed-call.ts";
import type { MediaRouteDeps } from "./audio.ts";

export const imagesResponseSchema = z.object({
  images: z.array(uriOut()).describe("URLs of the stored images (GET, no credentials)"),
  model: z.string(),
  provider: z.string(),
});

export function imageRoutes(deps: MediaRouteDeps) {
  // `model`: one of the catalogue's image models (an enum in the document), required when routing is manual.
  const body = withModel(
    imageRequestSchema.extend({ size: imageSizeSchema(deps.router.catalogue, () => deps.router.listModels("image").filter((m) => m.available)) }),
    modelIdSchema(deps.router.catalogue, { category: "image" }).nullable().optional(),
    imageRules(deps.router.catalogue),
  );
  return [
    defineRoute({
      method: "post",
      path: "/v1/images/generations",
      summary: "Generate 1–4 images; each is stored and returned as a file URL",
      tag: "images",
      auth: "api_key",
      scope: "images",
      body,
      responses: { 200: imagesResponseSchema },
      errors: ["budget_exceeded", "provider_error", "no_provider_available", "provider_timeout"],
      billing: {
        admit: "reserve",
        via: deps,
        category: "images",
        estimate: (ctx) => {
          const [width = 0, height = 0] = String(ctx.body.size).split("x").map(Number);
          return estimateNanos(deps.router.catalogue, "image", ctx.body.model, { input_tokens: 0, units: (ctx.body.n * width * height) / 1_000_000 });
        },
      },
      handler: async (ctx) => {
        const r = await generateImages(deps.router, ctx.body, { signal: ctx.signal });
        const files = await rehostAll(deps.media, r.images, {
          organizationId: ctx.auth.key.organization_id,
          environmentId: ctx.auth.key.environment_id,
          scope: "images",
          provider: r.provider,
          accept: ["image/png", "image/jpeg"],
          check: (bytes) => {
            const info = imageInfo(bytes);
            if (!info) return "an image is neither PNG nor JPEG";
            if (info.width !== r.width || info.height !== r.height) return `an image is ${info.width}x${info.height}, not ${r.width}x${r.height}`;
            return undefined;
          },
          // The stored type follows the bytes' signature, not what a provider or a download claimed.
          contentTypeOf: (bytes) => (imageInfo(bytes)?.format === "jpeg" ? "image/jpeg" : "image/png"),
        });
        // Billed once every image is stored: a failed copy bills nothing.
        await ctx.bill({ model: r.model, provider: r.provider, input_tokens: 0, units: (files.length * r.width * r.height) / 1_000_000, byok: r.byok });
        return json(200, { images: files.map((f) => deps.media.fileUrl(f.id)), model: r.model, provider: r.provider });
      },
    }),
  ];
}
