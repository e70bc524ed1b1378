// The model calls: /v1 chat, embeddings, vision, translations, audio,
// images and the model list, and the OpenAI- and Anthropic-compatible
// mounts, all over the one router and billed through the one meter.
import { anthropicRoutes } from "../compat/anthropic/routes.ts";
import { geminiRoutes } from "../compat/gemini/routes.ts";
import { openAiCompatRoutes } from "../compat/openai/routes.ts";
import { audioRoutes } from "../routes/audio.ts";
import { chatRoutes } from "../routes/chat.ts";
import { embeddingRoutes } from "../routes/embeddings.ts";
import { imageRoutes } from "../routes/images.ts";
import { modelRoutes } from "../routes/models.ts";
import { translationRoutes } from "../routes/translations.ts";
import { visionRoutes } from "../routes/vision.ts";
import type { BillingFeature } from "./billing.ts";
import type { CacheFeature } from "./cache.ts";
import type { Feature } from "./feature.ts";
import type { JobsFeature } from "./jobs.ts";
import type { SharedServices } from "./shared-services.ts";

export function aiFeature(s: SharedServices, billing: BillingFeature, jobs: JobsFeature, cache: CacheFeature): Feature {
  // The text routes' router looks answers up in the response cache first (its project's setting decides; gateway/cache/).
  const ai = { router: cache.router, usage: billing.meter, billing: billing.billing };
  const media = { ...ai, media: s.media };
  return {
    routes: [
      ...modelRoutes(ai),
      ...chatRoutes(ai),
      ...anthropicRoutes(ai),
      ...geminiRoutes(ai),
      ...embeddingRoutes(ai),
      ...visionRoutes(ai),
      ...translationRoutes(ai),
      ...audioRoutes(media),
      ...imageRoutes(media),
      ...openAiCompatRoutes({ ...media, now: () => s.clock.now(), jobs: jobs.routeDeps }),
    ],
  };
}
