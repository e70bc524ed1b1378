// Speech (docs/api/media.md): POST /v1/audio/speech through the router. Voices are
// per model and not interchangeable between providers: a named model must
// have the voice (400 naming its voices), and with model null only models
// having the voice are considered — fallbacks too; when no configured one
// has it, a 400 names the providers that do and the voices that would work.
import { z } from "zod";
import type { Catalogue, FieldNeed, ModelEntry, ModelListing } from "./catalogue.ts";
import type { AudioBytes } from "./media-types.ts";
import type { CallContext, Router } from "./router.ts";
import { routingStrategySchema } from "./types.ts";

export const speechRequestSchema = z
  .object({
    // 4096 characters: OpenAI's limit per call, and a few minutes of speech.
    text: z.string().min(1).max(4096),
    voice: z.string().min(1).max(100),
    model: z.string().min(1).nullable().optional(),
    routing_strategy: routingStrategySchema.default("auto"),
  })
  .strict();
export type SpeechBody = z.infer<typeof speechRequestSchema>;

/**
 * `voice` as the route documents and checks it: the voices some catalogue
 * model has (an enum). Whether the chosen model has it is checked when the
 * model is chosen (a 400 listing that model's voices). `available`: the
 * models that could serve now, whose voices a refusal lists.
 */
export function voiceSchema(catalogue: Catalogue, available: () => readonly ModelListing[] = () => []) {
  const voices = [...new Set(catalogue.models.flatMap((m) => m.capabilities.voices ?? []))];
  return z.enum(voices as [string, ...string[]], {
    // A missing voice is named as missing, not as "the voice undefined".
    error: (issue) => {
      if (issue.input === undefined) return "required: the voice to speak with (GET /v1/models?category=audio lists each model's voices)";
      const now = [...new Set(available().flatMap((m) => m.capabilities.voices ?? []))];
      const listed = now.length > 0 ? `; voices of the models available now: ${now.join(", ")}` : "";
      return `no model has the voice ${JSON.stringify(issue.input)}${listed}; GET /v1/models?category=audio lists each model's voices`;
    },
  });
}

export interface SpeechOutcome {
  audio: AudioBytes;
  model: string;
  provider: string;
  /** Billed units: characters of text. */
  characters: number;
  /** The organization's own key served it (billed at the BYOK price). */
  byok?: true | undefined;
}

/** Why a model cannot synthesize speech, or undefined when it can (the route's model enum). */
export function speaks(m: ModelEntry): string | undefined {
  return m.capabilities.voices ? undefined : `model ${m.id} does not synthesize speech`;
}

/** The voice as a field the chosen model must have: a 400 naming `voice` and the voices that would do. */
export function voiceNeed(voice: string): FieldNeed {
  return {
    path: "body.voice",
    asked: `the voice "${voice}"`,
    problem: (m) => {
      const voices = m.capabilities.voices ?? [];
      return voices.includes(voice) ? undefined : `model ${m.id} has no voice "${voice}"; its voices: ${voices.join(", ")}`;
    },
    offers: { noun: "voices", values: (m) => m.capabilities.voices ?? [] },
  };
}

export async function synthesizeSpeech(router: Router, req: SpeechBody, ctx: CallContext = {}): Promise<SpeechOutcome> {
  // The router refuses a voice no configured speech model has (400 naming `voice`), named model or not.
  const candidates = router.plan(req.model, req.routing_strategy, { category: "audio", media: speaks, fields: [voiceNeed(req.voice)] });
  const { value, entry, byok } = await router.routeCall(candidates, ctx.signal, (entry, adapter, signal) =>
    adapter.speech!({ model: entry.upstream_model ?? entry.id, voice: req.voice, text: req.text }, { signal }),
  );
  return { audio: value, model: entry.id, provider: entry.provider, characters: [...req.text].length, ...(byok ? { byok } : {}) };
}
