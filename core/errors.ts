// The one error registry. Every error Troupe returns has a stable code, an
// HTTP status and a default message; the gateway renders all of them in one
// body shape: {"error": {code, message, request_id, details?}} (docs/api/errors-and-limits.md).

export const errorCatalog = {
  invalid_request: { status: 400, message: "The request is invalid." },
  unauthorized: { status: 401, message: "A valid credential is required." },
  budget_exceeded: { status: 402, message: "The project's monthly budget is exhausted." },
  insufficient_scope: { status: 403, message: "The API key's scopes do not include this category." },
  // A key's model allowlist (its `models`) refuses the model named, or every model that could serve.
  model_not_allowed: { status: 403, message: "This API key may not use this model." },
  forbidden: { status: 403, message: "This credential may not perform this operation." },
  // The provider refused the organization's own stored key (docs/operations/byok.md): the organization's to fix, not retried.
  provider_credential_rejected: { status: 403, message: "The provider rejected the organization's stored credential for it." },
  // 403, not 409 or 429: clients (e.g. the Vercel AI SDK) retry 409 and 429,
  // and a full quota does not empty itself by waiting.
  quota_exceeded: { status: 403, message: "The organization's quota for this resource is used up." },
  not_found: { status: 404, message: "Not found." },
  method_not_allowed: { status: 405, message: "Method not allowed on this path." },
  conflict: { status: 409, message: "The resource is in a state that does not allow this operation." },
  // If-Match names another ETag (the files route): the client's copy is not this file.
  precondition_failed: { status: 412, message: "A precondition (If-Match) does not hold." },
  payload_too_large: { status: 413, message: "The request body is too large." },
  uri_too_long: { status: 414, message: "The request URL is too long." },
  unsupported_media_type: { status: 415, message: "The request body must be application/json." },
  upgrade_required: { status: 426, message: "This path serves WebSocket upgrades only." },
  rate_limited: { status: 429, message: "Too many requests." },
  // 431 and 505 (and the 400 for an unparseable request) are written by
  // uWS's C++ parser from fixed byte strings that scripts/patch-uws-errors.ts
  // rewrites to JSON; they are listed here so their codes are registered.
  headers_too_large: { status: 431, message: "The request headers are too large." },
  internal_error: { status: 500, message: "Internal error." },
  provider_error: { status: 502, message: "The provider failed to answer." },
  no_provider_available: { status: 503, message: "No provider is available for this request." },
  // The server lacks a program the request needs (ffmpeg): the operator's to
  // install, so the message says which; a retry gets the same answer.
  capability_unavailable: { status: 503, message: "This server cannot serve this request: a program it needs is not installed." },
  service_unavailable: { status: 503, message: "A backing service is unavailable." },
  provider_timeout: { status: 504, message: "The provider did not answer in time." },
  http_version_not_supported: { status: 505, message: "Only HTTP/1.1 is supported." },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof errorCatalog;

export interface FieldIssue {
  path: string;
  message: string;
}

export interface TroupeErrorOptions {
  details?: unknown;
  /** Seconds, rendered as the Retry-After header (429, 503). */
  retryAfterSeconds?: number;
  /** Further response headers (a 429's X-RateLimit-*). */
  headers?: [string, string][];
  cause?: unknown;
}

export class TroupeError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: unknown;
  readonly retryAfterSeconds: number | undefined;
  readonly headers: [string, string][] | undefined;

  constructor(code: ErrorCode, message?: string, options: TroupeErrorOptions = {}) {
    super(message ?? errorCatalog[code].message, { cause: options.cause });
    this.name = "TroupeError";
    this.code = code;
    this.status = errorCatalog[code].status;
    this.details = options.details;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.headers = options.headers;
  }
}

export function troupeError(code: ErrorCode, message?: string, options?: TroupeErrorOptions): TroupeError {
  return new TroupeError(code, message, options);
}

export function isTroupeError(error: unknown): error is TroupeError {
  return error instanceof TroupeError;
}

/** 400 naming the failing fields. */
export function invalidRequest(issues: FieldIssue[], message?: string): TroupeError {
  const summary = message ?? issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join("; ");
  return new TroupeError("invalid_request", summary || errorCatalog.invalid_request.message, { details: issues });
}

export interface ErrorBody {
  error: { code: ErrorCode; message: string; request_id: string; details?: unknown };
}

export function errorBody(error: TroupeError, requestId: string): ErrorBody {
  const body: ErrorBody = { error: { code: error.code, message: error.message, request_id: requestId } };
  if (error.details !== undefined) body.error.details = error.details;
  return body;
}
