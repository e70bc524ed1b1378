// POST /openai/v1/images/generations and /openai/v1/audio/speech: OpenAI's
// requests onto Troupe's image and speech routing, billed like /v1's.
// Images are re-hosted as on /v1 (`response_format: "url"`, the default,
// answers the stored file's URL; `b64_json` its bytes); speech answers the
// audio itself, as OpenAI does, in the `response_format` asked (mp3 by
// default), converted with ffmpeg when the provider made another format; a
// server without ffmpeg answers 503 capability_unavailable then, unbilled.
import { z } from "zod";
import { uriOut } from "../../../core/uri-schema.ts";
import { invalidRequest } from "../../../core/errors.ts";
import { imageInfo } from "../../../media/png.ts";
import { convertSpeech, needsConversion, speechContentType, speechFormats } from "../../../media/audio-convert.ts";
import { rehostAll } from "../../../media/rehost.ts";
import { generateImages } from "../../../providers/images.ts";
import { speaks, synthesizeSpeech } from "../../../providers/speech.ts";
import { routingStrategySchema } from "../../../providers/types.ts";
import type { Catalogue } from "../../../providers/catalogue.ts";
import { estimateNanos } from "../../billed-call.ts";
import { binary, defineRoute, json } from "../../route.ts";
import type { MediaRouteDeps } from "../../routes/audio.ts";
import { modelNameSchema, resolveModel } from "./model-name.ts";
import { modelCallErrors, openAiMount } from "./mount.ts";

const imageBodySchema = z
  .object({
    prompt: z.string().min(1).max(4000),
    model: z.string().min(1).default("troupe/auto"),
    n: z.number().int().min(1).max(4).nullable().optional(),
    size: z.string().regex(/^[1-9]\d{1,4}x[1-9]\d{1,4}$/, "<width>x<height>, e.g. 1024x1024").nullable().optional(),
    response_format: z.enum(["url", "b64_json"]).nullable().optional(),
    user: z.string().optional(),
    routing_strategy: routingStrategySchema.optional(),
  })
  .strict();

const imagesResponseSchema = z.object({
  created: z.number().int(),
  data: z.array(z.union([z.object({ url: uriOut("the stored image (GET, no credentials)") }), z.object({ b64_json: z.string() })])),
});

const speechBodySchema = z
  .object({
    model: z.string().min(1),
    input: z.string().min(1).max(4096),
    voice: z.string().min(1).max(100),
    // OpenAI's default is mp3; another format than the provider's is converted with ffmpeg.
    response_format: z.enum(speechFormats).default("mp3"),
    routing_strategy: routingStrategySchema.optional(),
  })
  .strict();

async function bytesOf(deps: MediaRouteDeps, id: string): Promise<Buffer> {
  const got = await deps.media.files.get(id);
  if (!got) throw new Error(`stored image ${id} vanished`);
  const chunks: Buffer[] = [];
  for await (const chunk of got.body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/**
 * The image request as Troupe routes it, checked against the named model
 * (the router would blame `model`; for a named model the field at fault is
 * size or n): before the reservation (its estimate) and before the call.
 */
function imageRequestOf(catalogue: Catalogue, body: z.output<typeof imageBodySchema>) {
  const routed = resolveModel(catalogue, body.model, { category: "image" }, body.routing_strategy);
  const request = { prompt: body.prompt, ...routed, size: body.size ?? "1024x1024", n: body.n ?? 1 };
  const caps = routed.model ? catalogue.get(routed.model)?.capabilities : undefined;
  if (caps?.sizes && !caps.sizes.includes(request.size)) throw invalidRequest([{ path: "size", message: `model ${routed.model} does not make ${request.size} images; its sizes: ${caps.sizes.join(", ")}` }]);
  if (caps && request.n > (caps.n_max ?? 1)) throw invalidRequest([{ path: "n", message: `model ${routed.model} makes at most ${caps.n_max ?? 1} images per request` }]);
  return request;
}

export function openAiMediaRoutes(deps: MediaRouteDeps & { now(): number }) {
  const { catalogue } = deps.router;
  const common = { ...openAiMount, method: "post" } as const;
  return [
    defineRoute({
      ...common,
      path: "/openai/v1/images/generations",
      summary: "OpenAI-compatible image generation (stored images as URLs, or b64_json)",
      scope: "images",
      body: imageBodySchema.extend({ model: modelNameSchema(catalogue, { category: "image" }).default("troupe/auto") }),
      responses: { 200: imagesResponseSchema },
      errors: modelCallErrors,
      billing: {
        admit: "reserve",
        via: deps,
        category: "images",
        estimate: (ctx) => {
          const request = imageRequestOf(catalogue, ctx.body);
          const [width = 0, height = 0] = request.size.split("x").map(Number);
          return estimateNanos(catalogue, "image", request.model, { input_tokens: 0, units: (request.n * width * height) / 1_000_000 });
        },
      },
      handler: async (ctx) => {
        const body = ctx.body;
        const r = await generateImages(deps.router, imageRequestOf(catalogue, body), { signal: ctx.signal });
        const files = await rehostAll(deps.media, r.images, {
          organizationId: ctx.auth.key.organization_id,
          environmentId: ctx.auth.key.environment_id,
          scope: "images",
          provider: r.provider,
          accept: ["image/png", "image/jpeg"],
          check: (bytes) => (imageInfo(bytes) ? undefined : "an image is neither PNG nor JPEG"),
          contentTypeOf: (bytes) => (imageInfo(bytes)?.format === "jpeg" ? "image/jpeg" : "image/png"),
        });
        // Billed once every image is stored: a failed copy bills nothing.
        await ctx.bill({ model: r.model, provider: r.provider, input_tokens: 0, units: (files.length * r.width * r.height) / 1_000_000, byok: r.byok });
        const data =
          body.response_format === "b64_json"
            ? await Promise.all(files.map(async (f) => ({ b64_json: (await bytesOf(deps, f.id)).toString("base64") })))
            : files.map((f) => ({ url: deps.media.fileUrl(f.id) }));
        return json(200, { created: Math.floor(deps.now() / 1000), data });
      },
    }),
    defineRoute({
      ...common,
      path: "/openai/v1/audio/speech",
      summary: "OpenAI-compatible text to speech: the audio itself in the body",
      scope: "audio",
      body: speechBodySchema.extend({ model: modelNameSchema(catalogue, { category: "audio", media: speaks }) }),
      responses: { 200: null },
      produces: speechFormats.map(speechContentType),
      errors: [...modelCallErrors, "capability_unavailable"],
      billing: {
        admit: "reserve",
        via: deps,
        category: "audio",
        estimate: (ctx) => {
          const routed = resolveModel(catalogue, ctx.body.model, { category: "audio", media: speaks }, ctx.body.routing_strategy);
          return estimateNanos(catalogue, "audio", routed.model, { input_tokens: 0, units: ctx.body.input.length });
        },
      },
      handler: async (ctx) => {
        const body = ctx.body;
        const routed = resolveModel(catalogue, body.model, { category: "audio", media: speaks }, body.routing_strategy);
        const r = await synthesizeSpeech(deps.router, { text: body.input, voice: body.voice, ...routed }, { signal: ctx.signal });
        // Which format the provider made is known only now; without ffmpeg an answer that cannot be converted is not billed (the server's gap, not the caller's).
        if (needsConversion(r.audio, body.response_format)) deps.media.capabilities.require("speech_conversion", `converting ${r.provider}'s ${r.audio.contentType} speech to ${body.response_format}`);
        await ctx.bill({ model: r.model, provider: r.provider, input_tokens: 0, units: r.characters, byok: r.byok });
        // Converted after billing: the provider's work is done whatever ffmpeg does with it.
        const audio = await convertSpeech(r.audio, body.response_format, { signal: ctx.signal });
        return binary(200, audio.bytes, audio.contentType);
      },
    }),
  ];
}
