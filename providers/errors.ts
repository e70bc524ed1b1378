// Failures of one upstream call, classified so the router knows what to do
// with them (Vercel AI SDK's isRetryable idea). Adapters throw these; only the
// router turns them into the registry's TroupeErrors (core/errors.ts).

export type FailureKind =
  /** HTTP status from the upstream. */
  | "http"
  /** Could not connect, connection reset, stream cut before it finished. */
  | "connection"
  /** The per-attempt deadline fired. */
  | "timeout"
  /** The upstream answered something we could not parse. */
  | "protocol";

export class ProviderCallError extends Error {
  readonly provider: string;
  readonly kind: FailureKind;
  readonly status: number | undefined;
  /** Worth trying the same provider again (408, 409, 429, ≥ 500, connection, timeout). */
  readonly retryable: boolean;
  /** Worth trying another provider (everything except request problems like 400/422). */
  readonly fallbackable: boolean;
  /** From Retry-After, in milliseconds. */
  readonly retryAfterMs: number | undefined;

  constructor(
    provider: string,
    kind: FailureKind,
    message: string,
    options: { status?: number | undefined; retryAfterMs?: number | undefined; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = "ProviderCallError";
    this.provider = provider;
    this.kind = kind;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
    this.retryable = kind !== "http" ? kind !== "protocol" : isRetryableStatus(options.status ?? 0);
    // A request the upstream judged malformed would fail everywhere; a bad key,
    // a missing model or an outage on one provider would not.
    this.fallbackable = kind !== "http" || !(options.status === 400 || options.status === 413 || options.status === 422);
  }
}

export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** Retry-After is either delta-seconds or an HTTP date. */
export function parseRetryAfterMs(value: string | string[] | undefined, nowMs: number = Date.now()): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined || v.trim() === "") return undefined;
  const seconds = Number(v);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(v);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

export function isProviderCallError(e: unknown): e is ProviderCallError {
  return e instanceof ProviderCallError;
}
