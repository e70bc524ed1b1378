// How the router classifies a failed provider attempt: which outcome the
// attempt observers see, which errors count as the provider's failure (and
// may fall back to another provider), and which Troupe error the caller gets
// once the attempt chain gives up.
import { BrokenCircuitError } from "cockatiel";
import { isTroupeError, TroupeError } from "../core/errors.ts";
import { isProviderCallError, ProviderCallError } from "./errors.ts";

/** How an attempt ended, for whoever observes attempts (metrics, traces). */
export type AttemptOutcome = "success" | "error" | "timeout" | "rejected" | "aborted" | "breaker_open";

export function attemptOutcome(e: unknown, clientAborted: boolean): AttemptOutcome {
  if (clientAborted) return "aborted";
  if (e instanceof BrokenCircuitError) return "breaker_open";
  if (!isProviderCallError(e)) return "error";
  if (e.kind === "timeout") return "timeout";
  // The request itself was refused (400/413/422): not the provider's fault.
  if (e.kind === "http" && !e.fallbackable) return "rejected";
  return "error";
}

/** The error as a provider's failure; undefined for Troupe errors and aborts, which are not the provider's. */
export function asProviderFailure(e: unknown, provider: string): ProviderCallError | undefined {
  if (isProviderCallError(e)) return e;
  if (isTroupeError(e)) return undefined;
  // An adapter bug or an unexpected library error: not retryable, but another provider may do better.
  if (e instanceof Error && e.name !== "AbortError") {
    return new ProviderCallError(provider, "protocol", `${provider} failed: ${e.message}`, { cause: e });
  }
  return undefined;
}

/** What the caller is thrown after `attempts` attempts ended in `e` (or in the deadline's `signal`). */
export function toTroupeError(e: unknown, signal: AbortSignal, attempts: number): unknown {
  if (isTroupeError(e)) return e;
  const failure = asProviderFailure(e, "provider") ?? (signal.aborted ? asProviderFailure(signal.reason, "provider") : undefined);
  if (!failure) return e;
  const details = { provider: failure.provider, upstream_status: failure.status ?? null, attempts };
  if (failure.kind === "timeout") {
    return new TroupeError("provider_timeout", failure.message, { details, cause: failure });
  }
  if (failure.kind === "http" && !failure.fallbackable) {
    return new TroupeError("invalid_request", `${failure.provider} rejected the request: ${failure.message}`, { details, cause: failure });
  }
  return new TroupeError("provider_error", failure.message, { details, cause: failure });
}
