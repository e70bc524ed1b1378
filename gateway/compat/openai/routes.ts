// The OpenAI-compatible mount, /openai/v1 (docs/guides/openai-compatible.md):
// OpenAI's wire format translated onto the routes' shared machinery —
// the same admission (key, scope, rate limit), budget reservations, router
// and billing as /v1 — answering errors in OpenAI's dialect (errors.ts).
import type { RouteDefinition } from "../../route.ts";
import { openAiChatRoutes, type OpenAiRouteDeps } from "./chat-route.ts";
import { openAiEmbeddingRoutes } from "./embeddings-route.ts";
import { openAiMediaRoutes } from "./media-routes.ts";
import { openAiTranscriptionRoutes } from "./transcription-route.ts";
import type { MediaDeps } from "../../../media/rehost.ts";
import { openAiModelRoutes } from "./models-route.ts";
import { openAiVideoRoutes } from "./videos-route.ts";
import type { JobRouteDeps } from "../../routes/jobs.ts";

export type { OpenAiRouteDeps } from "./chat-route.ts";

export function openAiCompatRoutes(deps: OpenAiRouteDeps & { media: MediaDeps; jobs: JobRouteDeps }): RouteDefinition[] {
  return [...openAiVideoRoutes(deps.jobs), ...openAiChatRoutes(deps), ...openAiModelRoutes(deps), ...openAiEmbeddingRoutes(deps), ...openAiMediaRoutes(deps), ...openAiTranscriptionRoutes(deps)];
}
