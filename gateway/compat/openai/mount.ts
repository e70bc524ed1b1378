// What every route of the OpenAI-compatible mount declares besides its own
// fields (as the Anthropic mount's `mount` in ../anthropic/routes.ts): its
// document tag, the API key credential, and OpenAI's error dialect; and the
// errors a model call on the mount may answer.
import type { ErrorCode } from "../../../core/errors.ts";
import { openAiDialect } from "./errors.ts";

export const openAiMount = { tag: "OpenAI-compatible", auth: "api_key", dialect: openAiDialect } as const;

/** A model call's errors: an unknown model (404 model_not_found), the budget, the providers. */
export const modelCallErrors: ErrorCode[] = ["not_found", "budget_exceeded", "provider_error", "no_provider_available", "provider_timeout"];
