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
  /**
   * The upstream's Retry-After, as sent: the router reads it against its own
   * clock when it decides the wait (core/retry-after.ts), since an HTTP date
   * means nothing without the time it is read at.
   */
  readonly retryAfter: string | undefined;

  constructor(
    provider: string,
    kind: FailureKind,
    message: string,
    options: { status?: number | undefined; retryAfter?: string | undefined; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = "ProviderCallError";
    this.provider = provider;
    this.kind = kind;
    this.status = options.status;
    this.retryAfter = options.retryAfter;
    this.retryable = kind !== "http" ? kind !== "protocol" : isRetryableStatus(options.status ?? 0);
    // A request the upstream judged malformed would fail everywhere; a bad key,
    // a missing model or an outage on one provider would not.
    this.fallbackable = kind !== "http" || !(options.status === 400 || options.status === 413 || options.status === 422);
  }
}

export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

export function isProviderCallError(e: unknown): e is ProviderCallError {
  return e instanceof ProviderCallError;
}
