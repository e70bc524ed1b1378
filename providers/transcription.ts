// Transcription (docs/api/media.md): the audio (already downloaded through the
// outbound guard) goes to a model with the transcription capability.
import { z } from "zod";
import { uriString } from "../core/uri-schema.ts";
import type { ModelEntry } from "./catalogue.ts";
import type { AudioBytes, TranscriptionResult } from "./media-types.ts";
import type { CallContext, Router } from "./router.ts";
import { routingStrategySchema } from "./types.ts";

export const transcriptionRequestSchema = z
  .object({
    audio_url: uriString(8192),
    language: z
      .string()
      .regex(/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})?$/, "a language code such as en or pt-BR")
      .optional(),
    model: z.string().min(1).nullable().optional(),
    routing_strategy: routingStrategySchema.default("auto"),
  })
  .strict();
export type TranscriptionBody = z.infer<typeof transcriptionRequestSchema>;

export interface TranscriptionOutcome extends TranscriptionResult {
  model: string;
  provider: string;
  /** The organization's own key served it (billed at the BYOK price). */
  byok?: true | undefined;
}

/** Why a model cannot transcribe, or undefined when it can (routing, and the route's model enum). */
export function transcribes(m: ModelEntry): string | undefined {
  return m.capabilities.transcription ? undefined : `model ${m.id} does not transcribe audio`;
}

export async function transcribeAudio(
  router: Router,
  req: { model?: string | null | undefined; routing_strategy: TranscriptionBody["routing_strategy"]; language?: string | undefined },
  audio: AudioBytes,
  ctx: CallContext = {},
): Promise<TranscriptionOutcome> {
  const candidates = router.plan(req.model, req.routing_strategy, { category: "audio", media: transcribes });
  const { value, entry, byok } = await router.routeCall(candidates, ctx.signal, (entry, adapter, signal) =>
    adapter.transcribe!({ model: entry.upstream_model ?? entry.id, audio, language: req.language?.split("-")[0]?.toLowerCase() }, { signal }),
  );
  return { ...value, model: entry.id, provider: entry.provider, ...(byok ? { byok } : {}) };
}
