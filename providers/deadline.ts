// Deadlines for the router: one per request (plus the caller's signal) and
// a shorter one per attempt, linked with plain listeners (cheaper than
// AbortSignal.any on the hot path). Aborts caused by a deadline carry a
// ProviderCallError of kind "timeout" as their reason.
import { ProviderCallError } from "./errors.ts";

/** Reason attached to aborts caused by the request deadline. */
export class DeadlineReached extends ProviderCallError {}

/**
 * The request's deadline plus the caller's signal; each attempt gets a child
 * with its own shorter deadline. Signals are linked with plain listeners
 * (cheaper than AbortSignal.any on the hot path) and unlinked when done.
 */
export class Deadline {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private readonly endsAtMs: number;
  private readonly client: AbortSignal | undefined;
  private readonly onClientAbort: (() => void) | undefined;
  readonly signal: AbortSignal;

  constructor(timeoutMs: number, client: AbortSignal | undefined) {
    this.endsAtMs = performance.now() + timeoutMs;
    this.client = client;
    this.signal = this.controller.signal;
    this.timer = setTimeout(() => {
      this.controller.abort(new DeadlineReached("router", "timeout", `no answer within the ${timeoutMs} ms deadline`));
    }, timeoutMs);
    if (client) {
      if (client.aborted) this.controller.abort(client.reason);
      else {
        this.onClientAbort = () => this.controller.abort(client.reason);
        client.addEventListener("abort", this.onClientAbort, { once: true });
      }
    }
  }

  get clientAborted(): boolean {
    return this.client?.aborted ?? false;
  }

  get expired(): boolean {
    return this.remainingMs() <= 0 || this.controller.signal.aborted;
  }

  remainingMs(): number {
    return this.endsAtMs - performance.now();
  }

  abort(): void {
    if (!this.controller.signal.aborted) this.controller.abort(new Error("stream consumer stopped"));
  }

  attempt(timeoutMs: number, provider: string): { signal: AbortSignal; succeeded(): void; failed(): void } {
    const ctl = new AbortController();
    const parent = this.signal;
    const onParentAbort = () => ctl.abort(parent.reason);
    if (parent.aborted) ctl.abort(parent.reason);
    else parent.addEventListener("abort", onParentAbort, { once: true });
    const timer = setTimeout(() => {
      ctl.abort(new ProviderCallError(provider, "timeout", `${provider} did not answer within ${Math.round(timeoutMs)} ms`));
    }, Math.max(1, timeoutMs));
    return {
      signal: ctl.signal,
      // The link to the request deadline stays: a stream keeps running under it.
      succeeded: () => clearTimeout(timer),
      failed: () => {
        clearTimeout(timer);
        parent.removeEventListener("abort", onParentAbort);
        // Whatever is still running for this attempt stops now.
        if (!ctl.signal.aborted) ctl.abort(new Error("attempt abandoned"));
      },
    };
  }

  dispose(): void {
    clearTimeout(this.timer);
    if (this.client && this.onClientAbort) this.client.removeEventListener("abort", this.onClientAbort);
  }
}

export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(t);
      reject(signal.reason);
    };
    const t = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
