// Troupe's errors in OpenAI's dialect: the body `{"error": {message, type,
// param, code}}`, the statuses the OpenAI SDKs map to their error classes,
// and OpenAI's rate-limit header names. The errors themselves still come
// from the one registry (core/errors.ts); this only renders them.
//
// Two choices where Troupe and OpenAI differ:
// - A hard budget (Troupe's 402 budget_exceeded) answers 429
//   `insufficient_quota`, as OpenAI does for an exhausted quota, so the SDKs
//   raise their RateLimitError; `x-should-retry: false` stops their
//   automatic retries (waiting does not refill a monthly budget).
// - `param` names the field as OpenAI does (`messages[1].content`).
import { TroupeError, type ErrorCode, type FieldIssue } from "../../../core/errors.ts";
import type { RouteDialect } from "../../route.ts";

/** OpenAI's `type` per Troupe code; the SDKs branch on the status, people read the type. */
const types: Record<ErrorCode, string> = {
  invalid_request: "invalid_request_error",
  unauthorized: "authentication_error",
  budget_exceeded: "insufficient_quota",
  insufficient_scope: "permission_error",
  model_not_allowed: "permission_error",
  forbidden: "permission_error",
  provider_credential_rejected: "permission_error",
  quota_exceeded: "permission_error",
  not_found: "invalid_request_error",
  method_not_allowed: "invalid_request_error",
  conflict: "invalid_request_error",
  precondition_failed: "invalid_request_error",
  payload_too_large: "invalid_request_error",
  uri_too_long: "invalid_request_error",
  unsupported_media_type: "invalid_request_error",
  upgrade_required: "invalid_request_error",
  rate_limited: "requests",
  headers_too_large: "invalid_request_error",
  internal_error: "server_error",
  provider_error: "server_error",
  no_provider_available: "server_error",
  capability_unavailable: "server_error",
  service_unavailable: "server_error",
  provider_timeout: "server_error",
  http_version_not_supported: "invalid_request_error",
};

/** OpenAI's own `code` where it has one; otherwise Troupe's code (documented in the guide). */
const codes: Partial<Record<ErrorCode, string>> = {
  unauthorized: "invalid_api_key",
  budget_exceeded: "insufficient_quota",
  rate_limited: "rate_limit_exceeded",
};

export interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** A detail a compat handler attaches for what OpenAI names itself (an unknown model is `model_not_found`). */
export interface OpenAiErrorDetails {
  openai_code: string;
  param?: string;
}

function isOpenAiDetails(details: unknown): details is OpenAiErrorDetails {
  return typeof details === "object" && details !== null && typeof (details as { openai_code?: unknown }).openai_code === "string";
}

function isFieldIssues(details: unknown): details is FieldIssue[] {
  return Array.isArray(details) && details.every((d) => typeof d === "object" && d !== null && typeof (d as { path?: unknown }).path === "string");
}

/** `body.messages.1.content` (Troupe's field path) → `messages[1].content` (OpenAI's). */
export function openAiParam(path: string): string | null {
  const parts = path.split(".").filter((p, i) => !(i === 0 && (p === "body" || p === "query")));
  if (parts.length === 0) return null;
  return parts.reduce((out, part) => (/^\d+$/.test(part) ? `${out}[${part}]` : out === "" ? part : `${out}.${part}`), "");
}

export function openAiError(error: TroupeError): { status: number; body: OpenAiErrorBody; headers?: [string, string][] } {
  let param: string | null = null;
  let code: string | null = codes[error.code] ?? error.code;
  if (isOpenAiDetails(error.details)) {
    code = error.details.openai_code;
    param = error.details.param ?? null;
  } else if (isFieldIssues(error.details) && error.details[0]) {
    param = openAiParam(error.details[0].path);
  }
  const body: OpenAiErrorBody = { error: { message: error.message, type: types[error.code], param, code } };
  if (error.code === "budget_exceeded") return { status: 429, body, headers: [["x-should-retry", "false"]] };
  // A missing ffmpeg stays missing: the SDKs' automatic retries of a 503 would only repeat the answer.
  if (error.code === "capability_unavailable") return { status: error.status, body, headers: [["x-should-retry", "false"]] };
  return { status: error.status, body };
}

/**
 * OpenAI's names for the key's window: `x-ratelimit-{limit,remaining,reset}-requests`
 * (reset as a duration, `"12s"`) and `-tokens`. Troupe's own names stay too.
 */
export function openAiRateLimitHeaders(headers: [string, string][]): [string, string][] {
  const out: [string, string][] = [...headers];
  for (const [name, value] of headers) {
    if (name === "x-ratelimit-limit") out.push(["x-ratelimit-limit-requests", value]);
    else if (name === "x-ratelimit-remaining") out.push(["x-ratelimit-remaining-requests", value]);
    else if (name === "x-ratelimit-reset") out.push(["x-ratelimit-reset-requests", `${value}s`]);
  }
  return out;
}

export const openAiErrorSchema = {
  type: "object",
  required: ["error"],
  properties: {
    error: {
      type: "object",
      required: ["message", "type", "param", "code"],
      properties: {
        message: { type: "string" },
        type: { type: "string" },
        param: { type: ["string", "null"] },
        code: { type: ["string", "null"] },
      },
    },
  },
};

/** OpenAI's dialect for the mount's routes: errors, rate-limit header names, and how the document describes them. */
export const openAiDialect: RouteDialect = {
  renderError: (error) => openAiError(error),
  rateLimitHeaders: openAiRateLimitHeaders,
  openApi: {
    errorSchema: () => ({ name: "OpenAiError", schema: openAiErrorSchema }),
    // A dialect may answer a code with another status (429 for an exhausted budget).
    statusOf: (code) => openAiError(new TroupeError(code)).status,
    security: [{ apiKey: [] }],
    securitySchemes: {},
  },
};
