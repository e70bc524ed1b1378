// The Stability AI adapter: /v2beta/stable-image/generate/core, multipart
// in, the image bytes out (accept: image/*). One image per call, sized by
// aspect ratio: the catalogue's sizes are what each ratio renders at.
import { ProviderCallError } from "../errors.ts";
import { createUpstreamClient, send, type UpstreamClient } from "../upstream-request.ts";
import type { ImageGenerationRequest, ProviderImage } from "../media-types.ts";
import { maxProviderBytes, multipart, readBytes } from "../media-http.ts";
import type { CallOptions, ProviderAdapter } from "../types.ts";
import { z } from "zod";
import { optionalString } from "../../core/env.ts";
import { defineProvider } from "../descriptor.ts";

export const stabilityAspectRatios: Readonly<Record<string, string>> = {
  "1024x1024": "1:1",
  "1344x768": "16:9",
  "768x1344": "9:16",
  "1216x832": "3:2",
  "832x1216": "2:3",
};

interface StabilityConfig {
  provider: string;
  baseUrl: string;
  apiKey: string;
}

async function stabilityImages(cfg: StabilityConfig, client: UpstreamClient, req: ImageGenerationRequest, opts: CallOptions): Promise<ProviderImage[]> {
  const ratio = stabilityAspectRatios[`${req.width}x${req.height}`];
  if (!ratio) throw new ProviderCallError(cfg.provider, "http", `${cfg.provider} has no aspect ratio for ${req.width}x${req.height}`, { status: 400 });
  const form = multipart({ prompt: req.prompt, aspect_ratio: ratio, output_format: "png" });
  const body = await send(cfg.provider, client, `${cfg.baseUrl.replace(/\/$/, "")}/v2beta/stable-image/generate/${req.model.replace(/^stable-image-/, "")}`, {
    headers: { authorization: `Bearer ${cfg.apiKey}`, accept: "image/*", "content-type": form.contentType },
    body: form.body,
    signal: opts.signal,
  });
  return [{ kind: "bytes", bytes: await readBytes(cfg.provider, body, maxProviderBytes), contentType: "image/png" }];
}

export function createStabilityAdapter(opts: { baseUrl: string; apiKey: string; client?: UpstreamClient }): ProviderAdapter {
  const cfg: StabilityConfig = { provider: "stability", baseUrl: opts.baseUrl, apiKey: opts.apiKey };
  const owned = opts.client === undefined;
  const client = opts.client ?? createUpstreamClient();
  return {
    provider: cfg.provider,
    generateImages: (req, o) => stabilityImages(cfg, client, req, o),
    close: async () => {
      if (owned) await client.close();
    },
  };
}

export const descriptor = defineProvider({
  name: "stability",
  title: "Stability",
  key: "stability",
  env: { STABILITY_API_KEY: optionalString, STABILITY_BASE_URL: z.url().default("https://api.stability.ai") },
  secretEnv: ["STABILITY_API_KEY"],
  settings: (e) => ({ apiKey: e.STABILITY_API_KEY, baseUrl: e.STABILITY_BASE_URL }),
  create: (s, deps) => (s.apiKey ? [createStabilityAdapter({ baseUrl: s.baseUrl, apiKey: s.apiKey, ...(deps.client ? { client: deps.client } : {}) })] : []),
})
