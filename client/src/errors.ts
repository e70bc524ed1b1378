// Errors as classes: every non-2xx answer (and an error event inside a chat
// stream) becomes a TroupeError carrying the server's `code`, `request_id`
// and `details`; a subclass per family lets callers `catch` by kind
// (`instanceof RateLimitError`) instead of comparing strings.
import type { components } from "./schema.js";

/** The codes the server's error registry can answer (from the OpenAPI document); a newer server may add more. */
export type ErrorCode = components["schemas"]["Error"]["error"]["code"];

export interface TroupeErrorInit {
  status: number;
  code: ErrorCode | (string & {});
  message: string;
  requestId?: string | undefined;
  details?: unknown;
  /** Milliseconds the server asked to wait (Retry-After), when it said. */
  retryAfterMs?: number | undefined;
}

export class TroupeError extends Error {
  /** HTTP status; 200 for an error event inside a stream that had already started. */
  readonly status: number;
  readonly code: ErrorCode | (string & {});
  /** The X-Request-Id of the failed request: quote it when asking for help. */
  readonly requestId: string | undefined;
  /** For `invalid_request`: `[{path, message}]` naming each failing field. */
  readonly details: unknown;
  readonly retryAfterMs: number | undefined;

  constructor(init: TroupeErrorInit) {
    super(init.message);
    this.name = new.target.name;
    this.status = init.status;
    this.code = init.code;
    this.requestId = init.requestId;
    this.details = init.details;
    this.retryAfterMs = init.retryAfterMs;
  }

  /** Worth sending again unchanged: rate limits, timeouts and server-side failures. */
  get isRetryable(): boolean {
    return this.status === 408 || this.status === 429 || this.status >= 500;
  }
}

/** 401 `unauthorized`: a missing, malformed, unknown or revoked credential. */
export class AuthenticationError extends TroupeError {}
/** 403 `forbidden`, `insufficient_scope`, `quota_exceeded`: the credential is known but may not do this. */
export class PermissionDeniedError extends TroupeError {}
/** 402 `budget_exceeded`: the project's monthly budget is used up. */
export class BudgetExceededError extends TroupeError {}
/** 404 `not_found` (also another organization's resource). */
export class NotFoundError extends TroupeError {}
/** 409 `conflict`, e.g. a message to a conversation that is not `idle`. */
export class ConflictError extends TroupeError {}
/** 400/413/414/415 and friends: the request itself is wrong; `details` names the fields. */
export class InvalidRequestError extends TroupeError {}
/** 429 `rate_limited`; `retryAfterMs` says how long the window has left. */
export class RateLimitError extends TroupeError {}
/** 502 `provider_error`, 503 `no_provider_available`, 504 `provider_timeout`: the upstream model failed. */
export class ProviderError extends TroupeError {}
/** 500 `internal_error`, 503 `service_unavailable` and any other 5xx. */
export class ServerError extends TroupeError {}
/** No HTTP answer at all (connection refused, reset, a WebSocket that could not open). */
export class ConnectionError extends TroupeError {}

type ErrorClass = new (init: TroupeErrorInit) => TroupeError;

const byCode: Record<string, ErrorClass> = {
  unauthorized: AuthenticationError,
  forbidden: PermissionDeniedError,
  insufficient_scope: PermissionDeniedError,
  quota_exceeded: PermissionDeniedError,
  budget_exceeded: BudgetExceededError,
  not_found: NotFoundError,
  conflict: ConflictError,
  invalid_request: InvalidRequestError,
  payload_too_large: InvalidRequestError,
  uri_too_long: InvalidRequestError,
  unsupported_media_type: InvalidRequestError,
  headers_too_large: InvalidRequestError,
  method_not_allowed: InvalidRequestError,
  rate_limited: RateLimitError,
  provider_error: ProviderError,
  no_provider_available: ProviderError,
  provider_timeout: ProviderError,
};

function classFor(code: string, status: number): ErrorClass {
  const known = byCode[code];
  if (known) return known;
  if (status === 429) return RateLimitError;
  if (status >= 500) return ServerError;
  if (status === 401) return AuthenticationError;
  if (status === 404) return NotFoundError;
  return TroupeError;
}

export function createError(init: TroupeErrorInit): TroupeError {
  const Class = classFor(init.code, init.status);
  return new Class(init);
}

/** Retry-After in milliseconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Math.round(Number(value) * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The error a non-2xx response stands for; `body` is its parsed JSON (or text) when already read. */
export function errorFromResponse(response: Response, body: unknown): TroupeError {
  const error = isObject(body) && isObject(body["error"]) ? body["error"] : undefined;
  const code = typeof error?.["code"] === "string" ? error["code"] : `http_${response.status}`;
  const message =
    typeof error?.["message"] === "string"
      ? error["message"]
      : `HTTP ${response.status}${typeof body === "string" && body ? `: ${body.slice(0, 200)}` : ""}`;
  const requestId = typeof error?.["request_id"] === "string" ? error["request_id"] : (response.headers.get("x-request-id") ?? undefined);
  return createError({
    status: response.status,
    code,
    message,
    requestId,
    details: error?.["details"],
    retryAfterMs: parseRetryAfter(response.headers.get("retry-after")),
  });
}
