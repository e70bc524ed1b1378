// The voiceover of a video job: speech through the router (providers/
// speech.ts) with the configured model and voice (VIDEO_NARRATION_MODEL,
// VIDEO_NARRATION_VOICE). Without a configured voice, routing picks the
// speech model and the narration takes that model's first voice, so the
// default works whichever speech provider is configured.
import type { JobsConfig } from "../../core/config.ts";
import { TroupeError } from "../../core/errors.ts";
import type { Router } from "../../providers/router.ts";
import { speaks, synthesizeSpeech } from "../../providers/speech.ts";
import type { NarrationOutcome } from "./job-steps.ts";

export function narrator(router: Router, settings: Pick<JobsConfig, "narrationModel" | "narrationVoice">) {
  return async (text: string, signal: AbortSignal): Promise<NarrationOutcome> => {
    let model = settings.narrationModel ?? null;
    let voice = settings.narrationVoice;
    if (!voice) {
      const [first] = router.plan(model, "auto", { category: "audio", media: speaks });
      voice = first?.capabilities.voices?.[0];
      model ??= first?.id ?? null;
      if (!voice) throw new TroupeError("no_provider_available", "no speech model is available for the narration");
    }
    return synthesizeSpeech(router, { text, voice, model, routing_strategy: "auto" }, { signal });
  };
}
