// Retries as a fetch wrapper under openapi-fetch: a 429 or 5xx answer is sent
// again, at most `retries` more times, after the server's Retry-After (or an
// exponential backoff when it gave none). A wait longer than
// `maxRetryAfterMs` is not taken: the answer goes back to the caller, whose
// error then carries `retryAfterMs`. Sleeping is injected so tests need no clock.
import { parseRetryAfter } from "./errors.ts";

export type Fetch = (input: Request) => Promise<Response>;
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export interface RetryOptions {
  /** Further attempts after the first (0 disables retries). */
  retries: number;
  /** The first backoff when no Retry-After is given; doubled per attempt. */
  baseDelayMs: number;
  /** The longest wait taken; a longer Retry-After ends the retries. */
  maxRetryAfterMs: number;
  sleep: Sleep;
  /** Called before each wait (logging, metrics, tests). */
  onRetry?: ((info: { attempt: number; delayMs: number; status: number; request: Request }) => void) | undefined;
}

export const defaultSleep: Sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });

export function isRetryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

export function retryingFetch(fetch: Fetch, options: RetryOptions): Fetch {
  return async (request) => {
    for (let attempt = 0; ; attempt += 1) {
      const last = attempt >= options.retries;
      // A body can be sent once: every attempt but the last sends a copy.
      const response = await fetch(last ? request : request.clone());
      if (last || !isRetryableStatus(response.status)) return response;
      const delayMs = parseRetryAfter(response.headers.get("retry-after")) ?? options.baseDelayMs * 2 ** attempt;
      if (delayMs > options.maxRetryAfterMs) return response;
      await response.body?.cancel();
      options.onRetry?.({ attempt: attempt + 1, delayMs, status: response.status, request });
      await options.sleep(delayMs, request.signal);
    }
  };
}
