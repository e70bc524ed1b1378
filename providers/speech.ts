// Speech (docs/api/media.md): POST /v1/audio/speech through the router. Voices are
// per model and not interchangeable between providers: a named model must
// have the voice (400 naming its voices), and with model null only models
// having the voice are considered — fallbacks too.
import { z } from "zod";
import { invalidRequest } from "../core/errors.ts";
import type { Catalogue, ModelEntry } from "./catalogue.ts";
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
 * model is chosen (a 400 listing that model's voices).
 */
export function voiceSchema(catalogue: Catalogue) {
  const voices = [...new Set(catalogue.models.flatMap((m) => m.capabilities.voices ?? []))];
  return z.enum(voices as [string, ...string[]], {
    // A missing voice is named as missing, not as "the voice undefined".
    error: (issue) =>
      issue.input === undefined
        ? "required: the voice to speak with (GET /v1/models?category=audio lists each model's voices)"
        : `no model has the voice ${JSON.stringify(issue.input)}; GET /v1/models?category=audio lists each model's voices`,
  });
}

export interface SpeechOutcome {
  audio: AudioBytes;
  model: string;
  provider: string;
  /** Billed units: characters of text. */
  characters: number;
}

/** Why a model cannot synthesize speech, or undefined when it can (the route's model enum). */
export function speaks(m: ModelEntry): string | undefined {
  return m.capabilities.voices ? undefined : `model ${m.id} does not synthesize speech`;
}

function voiceProblem(voice: string) {
  return (m: ModelEntry): string | undefined => {
    const voices = m.capabilities.voices;
    if (!voices) return speaks(m);
    return voices.includes(voice) ? undefined : `model ${m.id} has no voice "${voice}"; its voices: ${voices.join(", ")}`;
  };
}

export async function synthesizeSpeech(router: Router, req: SpeechBody, ctx: CallContext = {}): Promise<SpeechOutcome> {
  if (!req.model) {
    const speechModels = router.catalogue.ofCategory("audio").filter((m) => m.capabilities.voices);
    if (!speechModels.some((m) => m.capabilities.voices!.includes(req.voice))) {
      const known = speechModels.map((m) => `${m.id}: ${m.capabilities.voices!.join(", ")}`).join("; ");
      throw invalidRequest([{ path: "body.voice", message: `no model has the voice "${req.voice}"; voices per model: ${known}` }]);
    }
  } else {
    const named = router.catalogue.get(req.model);
    const problem = named?.category === "audio" ? voiceProblem(req.voice)(named) : undefined;
    if (problem) throw invalidRequest([{ path: "body.voice", message: problem }]);
  }
  const candidates = router.plan(req.model, req.routing_strategy, { category: "audio", media: voiceProblem(req.voice) });
  const deadline = router.startDeadline(ctx.signal);
  try {
    const { value, entry } = await router.attempts(candidates, deadline, (entry, adapter, signal) =>
      adapter.speech!({ model: entry.upstream_model ?? entry.id, voice: req.voice, text: req.text }, { signal }),
    );
    return { audio: value, model: entry.id, provider: entry.provider, characters: [...req.text].length };
  } finally {
    deadline.dispose();
  }
}
