// Troupe's errors (one registry, core/errors.ts) as Anthropic writes them:
// {"type":"error","error":{"type","message"},"request_id"} with Anthropic's
// statuses, so the Anthropic SDKs raise their own error classes. The
// `request-id` header is Anthropic's name for Troupe's x-request-id, and
// `x-should-retry` tells the SDKs what to retry: they retry every other
// status of a base URL that is not Anthropic's own, a 400 included.
import { z } from "zod";
import type { ErrorCode, TroupeError } from "../../../core/errors.ts";
import type { ErrorAnswer, RouteDialect } from "../../route.ts";
import { errorBodySchema, type ErrorType } from "./schemas.ts";

/** Anthropic's status and type for each Troupe error; codes Anthropic has no status for keep Troupe's. */
const mapping: Record<ErrorCode, { status: number; type: ErrorType }> = {
  invalid_request: { status: 400, type: "invalid_request_error" },
  unauthorized: { status: 401, type: "authentication_error" },
  // Anthropic's own answer when the account cannot pay (the SDKs raise their base APIError for 402).
  budget_exceeded: { status: 402, type: "billing_error" },
  insufficient_scope: { status: 403, type: "permission_error" },
  model_not_allowed: { status: 403, type: "permission_error" },
  forbidden: { status: 403, type: "permission_error" },
  // The provider refused the organization's own key (BYOK): Anthropic would say the key lacks permission.
  provider_credential_rejected: { status: 403, type: "permission_error" },
  quota_exceeded: { status: 403, type: "permission_error" },
  not_found: { status: 404, type: "not_found_error" },
  method_not_allowed: { status: 405, type: "invalid_request_error" },
  conflict: { status: 409, type: "invalid_request_error" },
  precondition_failed: { status: 412, type: "invalid_request_error" },
  payload_too_large: { status: 413, type: "request_too_large" },
  uri_too_long: { status: 414, type: "invalid_request_error" },
  unsupported_media_type: { status: 415, type: "invalid_request_error" },
  upgrade_required: { status: 426, type: "invalid_request_error" },
  rate_limited: { status: 429, type: "rate_limit_error" },
  headers_too_large: { status: 431, type: "invalid_request_error" },
  internal_error: { status: 500, type: "api_error" },
  provider_error: { status: 502, type: "api_error" },
  // Anthropic's "overloaded": every provider that could serve is failing or unconfigured; retry later.
  no_provider_available: { status: 529, type: "overloaded_error" },
  service_unavailable: { status: 529, type: "overloaded_error" },
  // Not "overloaded": waiting does not install the program the request needs.
  capability_unavailable: { status: 503, type: "api_error" },
  provider_timeout: { status: 504, type: "timeout_error" },
  http_version_not_supported: { status: 505, type: "api_error" },
};

const retryable = (status: number): boolean => status === 408 || status === 429 || status >= 500;

/** The body of an error answer or of a stream's `error` event. */
export function anthropicErrorBody(error: TroupeError, requestId: string): z.infer<typeof errorBodySchema> {
  return { type: "error", error: { type: mapping[error.code].type, message: error.message }, request_id: requestId };
}

export function renderAnthropicError(error: TroupeError, requestId: string): ErrorAnswer {
  const { status } = mapping[error.code];
  return {
    status,
    body: anthropicErrorBody(error, requestId),
    headers: [
      ["request-id", requestId],
      ["x-should-retry", String(retryable(status) && error.code !== "capability_unavailable")],
    ],
  };
}

/** One Anthropic SSE event (OpenAPI 3.1 describes an event stream by one event's schema). */
const eventStream = (): Record<string, unknown> => ({
  type: "object",
  required: ["event", "data"],
  properties: {
    event: {
      type: "string",
      enum: ["message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop", "error"],
    },
    data: { type: "string", contentMediaType: "application/json" },
  },
  description: "Anthropic's Messages stream: event lines naming each JSON data line (docs/guides/anthropic-compatible.md)",
});

let errorSchema: Record<string, unknown> | undefined;

export const anthropicDialect: RouteDialect = {
  renderError: renderAnthropicError,
  openApi: {
    errorSchema: () => ({ name: "AnthropicError", schema: (errorSchema ??= z.toJSONSchema(errorBodySchema, { io: "output" }) as Record<string, unknown>) }),
    statusOf: (code) => mapping[code].status,
    security: [{ anthropicApiKey: [] }, { apiKey: [] }],
    securitySchemes: { anthropicApiKey: { type: "apiKey", in: "header", name: "x-api-key", description: "A Troupe API key, as the Anthropic SDKs send it" } },
    eventStream,
  },
};
