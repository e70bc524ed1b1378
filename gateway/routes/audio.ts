// POST /v1/audio/speech and /v1/audio/transcriptions (docs/api/media.md). Speech
// audio is stored before the answer and returned as a file URL; the audio
// to transcribe is read from the file store when its URL is one of this
// Troupe's (a speech result, say), else downloaded through the outbound
// guard (a refused or failing caller URL is a 400 naming the reason; see
// media/input-url.ts). Usage: characters for speech, seconds of audio for
// transcription.
import { z } from "zod";
import { uriOut } from "../../core/uri-schema.ts";
import type { ErrorCode } from "../../core/errors.ts";
import { audioDurationSeconds } from "../../media/audio-duration.ts";
import { fetchInputUrl } from "../../media/input-url.ts";
import { rehostAll, type MediaDeps } from "../../media/rehost.ts";
import { speaks, speechRequestSchema, synthesizeSpeech, voiceSchema } from "../../providers/speech.ts";
import { transcribeAudio, transcribes, transcriptionRequestSchema } from "../../providers/transcription.ts";
import { modelIdSchema, withModel } from "../../providers/catalogue.ts";
import { speechVoiceRules } from "../../providers/model-rules.ts";
import { defineRoute, json, routeGroup } from "../route.ts";
import { estimateNanos } from "../billed-call.ts";
import type { AiRouteDeps } from "../usage-context.ts";

export type MediaRouteDeps = AiRouteDeps & { media: MediaDeps };

export const speechResponseSchema = z.object({
  audio: uriOut("URL of the stored audio file (GET, no credentials)"),
  model: z.string(),
  provider: z.string(),
});
export const transcriptionResponseSchema = z.object({ text: z.string(), model: z.string(), provider: z.string() });

const audioTypes = ["audio/", "video/", "application/octet-stream"] as const;

/** A billed model call's errors. */
const modelCallErrors: ErrorCode[] = ["budget_exceeded", "provider_error", "no_provider_available", "provider_timeout"];
/** What both audio routes declare: their document tag, the API key with the audio scope, and a billed model call's errors. */
const audioRoute = routeGroup({ tag: "audio", auth: "api_key", scope: "audio", errors: modelCallErrors });

export function audioRoutes(deps: MediaRouteDeps) {
  // `model`: one of the catalogue's models that can (an enum in the document), required when routing is manual.
  const { catalogue } = deps.router;
  const speechBody = withModel(
    speechRequestSchema.extend({ voice: voiceSchema(catalogue, () => deps.router.listModels("audio").filter((m) => m.available)) }),
    modelIdSchema(catalogue, { category: "audio", media: speaks }).nullable().optional(),
    speechVoiceRules(catalogue, { category: "audio", media: speaks }),
  );
  const transcriptionBody = withModel(transcriptionRequestSchema, modelIdSchema(catalogue, { category: "audio", media: transcribes }).nullable().optional());
  return [
    defineRoute({
      ...audioRoute("post", "/v1/audio/speech"),
      summary: "Text to speech; the audio is stored and returned as a file URL",
      body: speechBody,
      responses: { 200: speechResponseSchema },
      billing: {
        admit: "reserve",
        via: deps,
        category: "audio",
        estimate: (ctx) => estimateNanos(deps.router.catalogue, "audio", ctx.body.model, { input_tokens: 0, units: ctx.body.text.length }),
      },
      handler: async (ctx) => {
        const r = await synthesizeSpeech(deps.router, ctx.body, { signal: ctx.signal });
        // Billed once the audio is stored: a failed copy bills nothing.
        const [file] = await rehostAll(deps.media, [{ kind: "bytes", ...r.audio }], {
          organizationId: ctx.auth.key.organization_id,
          environmentId: ctx.auth.key.environment_id,
          scope: "audio",
          provider: r.provider,
          accept: ["audio/"],
          check: (bytes) => (bytes.length < 16 ? "the audio is empty" : undefined),
        });
        await ctx.bill({ model: r.model, provider: r.provider, input_tokens: 0, units: r.characters, byok: r.byok });
        return json(200, { audio: deps.media.fileUrl(file!.id), model: r.model, provider: r.provider });
      },
    }),
    defineRoute({
      ...audioRoute("post", "/v1/audio/transcriptions"),
      summary: "Transcribe the audio at audio_url (one of this Troupe's file URLs, read from the store, or fetched through the outbound guard)",
      body: transcriptionBody,
      responses: { 200: transcriptionResponseSchema },
      // not_found: an audio_url of this Troupe naming no file of the caller's organization.
      errors: [...modelCallErrors, "not_found"],
      // The duration is known only after the download: admitted on what is spent (nothing reserved).
      billing: { admit: "reserve", via: deps, category: "audio", estimate: () => 0 },
      handler: async (ctx) => {
        // Plan first: an unknown or unfit model is refused before anything is downloaded.
        deps.router.plan(ctx.body.model, ctx.body.routing_strategy, { category: "audio", media: transcribes });
        const audio = await fetchInputUrl(deps.media, ctx.body.audio_url, { organizationId: ctx.auth.key.organization_id, accept: audioTypes, field: "audio_url", signal: ctx.signal });
        const r = await transcribeAudio(deps.router, ctx.body, { bytes: audio.body, contentType: audio.contentType }, { signal: ctx.signal });
        const seconds = r.durationSeconds ?? (await audioDurationSeconds(audio.body)) ?? 0;
        await ctx.bill({ model: r.model, provider: r.provider, input_tokens: 0, units: Math.round(seconds * 1000) / 1000, byok: r.byok });
        return json(200, { text: r.text, model: r.model, provider: r.provider });
      },
    }),
  ];
}
