// Troupe's errors (one registry, core/errors.ts) as Google's APIs write
// them: {"error":{"code": <HTTP status>, "message", "status": <google.rpc
// code name>}}, which @google/genai and google-genai raise as their own
// ApiError / errors.APIError with the status and message.
import { z } from "zod";
import type { ErrorCode, TroupeError } from "../../../core/errors.ts";
import type { ErrorAnswer, RouteDialect } from "../../route.ts";
import { errorBodySchema } from "./schemas.ts";

/** Google's HTTP status and status name for each Troupe error. */
const mapping: Record<ErrorCode, { code: number; status: string }> = {
  invalid_request: { code: 400, status: "INVALID_ARGUMENT" },
  unauthorized: { code: 401, status: "UNAUTHENTICATED" },
  // Google's answer for a used-up quota; Gemini has no 402.
  budget_exceeded: { code: 429, status: "RESOURCE_EXHAUSTED" },
  insufficient_scope: { code: 403, status: "PERMISSION_DENIED" },
  model_not_allowed: { code: 403, status: "PERMISSION_DENIED" },
  forbidden: { code: 403, status: "PERMISSION_DENIED" },
  provider_credential_rejected: { code: 403, status: "PERMISSION_DENIED" },
  quota_exceeded: { code: 429, status: "RESOURCE_EXHAUSTED" },
  not_found: { code: 404, status: "NOT_FOUND" },
  method_not_allowed: { code: 405, status: "UNIMPLEMENTED" },
  conflict: { code: 409, status: "ABORTED" },
  precondition_failed: { code: 412, status: "FAILED_PRECONDITION" },
  payload_too_large: { code: 413, status: "INVALID_ARGUMENT" },
  uri_too_long: { code: 414, status: "INVALID_ARGUMENT" },
  unsupported_media_type: { code: 415, status: "INVALID_ARGUMENT" },
  upgrade_required: { code: 426, status: "FAILED_PRECONDITION" },
  rate_limited: { code: 429, status: "RESOURCE_EXHAUSTED" },
  headers_too_large: { code: 431, status: "INVALID_ARGUMENT" },
  internal_error: { code: 500, status: "INTERNAL" },
  provider_error: { code: 502, status: "UNAVAILABLE" },
  no_provider_available: { code: 503, status: "UNAVAILABLE" },
  capability_unavailable: { code: 503, status: "UNAVAILABLE" },
  service_unavailable: { code: 503, status: "UNAVAILABLE" },
  provider_timeout: { code: 504, status: "DEADLINE_EXCEEDED" },
  http_version_not_supported: { code: 505, status: "INVALID_ARGUMENT" },
};

export type GeminiErrorBody = z.infer<typeof errorBodySchema>;

/** The body of an error answer, or of a stream's last `data:` event. */
export function geminiErrorBody(error: TroupeError): GeminiErrorBody {
  const { code, status } = mapping[error.code];
  return { error: { code, message: error.message, status } };
}

export function renderGeminiError(error: TroupeError): ErrorAnswer {
  return { status: mapping[error.code].code, body: geminiErrorBody(error) };
}

/** One `data:` line of :streamGenerateContent?alt=sse (a GenerateContentResponse as JSON). */
const eventStream = (): Record<string, unknown> => ({
  type: "object",
  required: ["data"],
  properties: { data: { type: "string", contentMediaType: "application/json" } },
  description: "Gemini's stream: each data line a GenerateContentResponse (docs/guides/gemini.md)",
});

let errorSchema: Record<string, unknown> | undefined;

export const geminiDialect: RouteDialect = {
  renderError: renderGeminiError,
  openApi: {
    errorSchema: () => ({ name: "GeminiError", schema: (errorSchema ??= z.toJSONSchema(errorBodySchema, { io: "output" }) as Record<string, unknown>) }),
    statusOf: (code) => mapping[code].code,
    security: [{ geminiApiKey: [] }, { geminiApiKeyQuery: [] }, { apiKey: [] }],
    securitySchemes: {
      geminiApiKey: { type: "apiKey", in: "header", name: "x-goog-api-key", description: "A Troupe API key, as Google's SDKs send it" },
      geminiApiKeyQuery: { type: "apiKey", in: "query", name: "key", description: "A Troupe API key in the query, as Gemini's REST examples send it (redacted from logs)" },
    },
    eventStream,
  },
};
