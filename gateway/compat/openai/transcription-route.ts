// POST /openai/v1/audio/transcriptions: OpenAI's multipart upload (the file
// itself, as the SDKs send it) onto Troupe's transcription routing, billed
// per second of audio like POST /v1/audio/transcriptions (which fetches an
// audio_url instead). `response_format`: json (the default) `{"text"}`,
// text the plain transcript, verbose_json, srt and vtt as OpenAI answers
// them (transcription-formats.ts).
import { z } from "zod";
import { audioDurationSeconds } from "../../../media/audio-duration.ts";
import { sniffAudio } from "../../../media/sniff.ts";
import { invalidRequest } from "../../../core/errors.ts";
import { transcribeAudio, transcribes } from "../../../providers/transcription.ts";
import { routingStrategySchema } from "../../../providers/types.ts";
import { binary, defineRoute, json } from "../../route.ts";
import type { AiRouteDeps } from "../../usage-context.ts";
import { isUpload, type UploadedFile } from "../../validation.ts";
import { modelCallErrors, openAiMount } from "./mount.ts";
import { segmentsOf, srt, transcriptionFormats, verboseJson, vtt } from "./transcription-formats.ts";
import { modelNameSchema, resolveModel } from "./model-name.ts";

// 25 MB: OpenAI's own limit for an uploaded file (the body limit applies first).
const maxUploadBytes = 25 * 1024 * 1024;

const uploadSchema = z
  .custom<UploadedFile>((v) => isUpload(v) && v.bytes.length > 0 && v.bytes.length <= maxUploadBytes, { message: "an audio file of 1 byte to 25 MB" })
  .meta({ type: "string", format: "binary", minLength: 1, description: "the audio file (1 byte to 25 MB)" });

const transcriptionBodySchema = z
  .object({
    file: uploadSchema,
    model: z.string().min(1),
    language: z
      .string()
      .regex(/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})?$/, "a language code such as en or pt-BR")
      .optional(),
    // Accepted for the SDKs' sake, not forwarded (see the guide).
    prompt: z.string().max(10_000).optional(),
    temperature: z.string().regex(/^(0(\.\d+)?|1(\.0+)?)$/, "a number from 0 to 1").optional(),
    response_format: z.enum(transcriptionFormats).optional(),
    routing_strategy: routingStrategySchema.optional(),
  })
  .strict();

const extensionTypes: Record<string, string> = { wav: "audio/wav", mp3: "audio/mpeg", mpeg: "audio/mpeg", mpga: "audio/mpeg", m4a: "audio/mp4", mp4: "audio/mp4", ogg: "audio/ogg", oga: "audio/ogg", webm: "audio/webm", flac: "audio/flac" };

/** The SDKs often send a file without a type: then its extension says it. */
function audioTypeOf(file: UploadedFile): string {
  if (file.contentType && file.contentType !== "application/octet-stream") return file.contentType;
  return extensionTypes[file.filename.split(".").pop()?.toLowerCase() ?? ""] ?? "application/octet-stream";
}

export function openAiTranscriptionRoutes(deps: AiRouteDeps) {
  const { catalogue } = deps.router;
  return [
    defineRoute({
      method: "post",
      path: "/openai/v1/audio/transcriptions",
      summary: "OpenAI-compatible transcription of an uploaded audio file (multipart/form-data)",
      ...openAiMount,
      scope: "audio",
      bodyType: "multipart",
      body: transcriptionBodySchema.extend({ model: modelNameSchema(catalogue, { category: "audio", media: transcribes }) }),
      responses: {
        200: z
          .object({
            text: z.string(),
            task: z.literal("transcribe").optional(),
            language: z.string().optional(),
            duration: z.number().optional(),
            segments: z.array(z.record(z.string(), z.unknown())).optional(),
            usage: z.record(z.string(), z.unknown()).optional(),
          })
          .describe("json: text; verbose_json adds task, language, duration, segments and usage; text, srt and vtt answer text/plain or text/vtt"),
      },
      produces: ["text/plain", "text/vtt"],
      errors: modelCallErrors,
      // The duration is known only once transcribed: admitted on what is spent (nothing reserved), as on /v1.
      billing: { admit: "reserve", via: deps, category: "audio", estimate: () => 0 },
      handler: async (ctx) => {
        const body = ctx.body;
        const routed = resolveModel(catalogue, body.model, { category: "audio", media: transcribes }, body.routing_strategy);
        // By its bytes, before any provider or ffprobe reads them: a playlist or a text file named .wav is refused here.
        if (!sniffAudio(body.file.bytes)) throw invalidRequest([{ path: "body.file", message: "not an audio file this route takes (WAV, MP3, FLAC, Ogg, MP4/M4A or WebM, by its first bytes)" }]);
        const audio = { bytes: body.file.bytes, contentType: audioTypeOf(body.file) };
        const r = await transcribeAudio(deps.router, { ...routed, language: body.language }, audio, { signal: ctx.signal });
        const seconds = r.durationSeconds ?? (await audioDurationSeconds(audio.bytes)) ?? 0;
        await ctx.bill({ model: r.model, provider: r.provider, input_tokens: 0, units: Math.round(seconds * 1000) / 1000, byok: r.byok });
        switch (body.response_format) {
          case "text":
            return binary(200, Buffer.from(r.text, "utf8"), "text/plain; charset=utf-8");
          case "srt":
            return binary(200, Buffer.from(srt(segmentsOf(r, seconds)), "utf8"), "text/plain; charset=utf-8");
          case "vtt":
            return binary(200, Buffer.from(vtt(segmentsOf(r, seconds)), "utf8"), "text/vtt; charset=utf-8");
          case "verbose_json":
            return json(200, verboseJson(r, seconds, body.language));
          default:
            return json(200, { text: r.text });
        }
      },
    }),
  ];
}
