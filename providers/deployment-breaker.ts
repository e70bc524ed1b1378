// One deployment's circuit breaker, on the router's injected clock (the
// provider breakers are cockatiel's, which reads the wall clock): opens after
// N consecutive retryable failures, lets one probe through once its pause has
// passed, and closes on the probe's success (or opens again on its failure).
// Only provider faults count: a caller's abort or a refused request says
// nothing about a deployment's health.
import { isProviderCallError } from "./errors.ts";
import type { BreakerOptions, HealthView } from "./router-health.ts";

export class DeploymentBreaker implements HealthView {
  private failures = 0;
  private openedAtMs: number | undefined;
  private probing = false;
  private readonly opts: BreakerOptions;
  private readonly now: () => number;

  constructor(opts: BreakerOptions, now: () => number) {
    this.opts = opts;
    this.now = now;
  }

  private get pauseOver(): boolean {
    return this.openedAtMs !== undefined && this.now() - this.openedAtMs >= this.opts.halfOpenAfterMs;
  }

  get state(): "closed" | "open" | "half_open" {
    if (this.openedAtMs === undefined) return "closed";
    return this.pauseOver ? "half_open" : "open";
  }

  /** Closed, or half-open with no probe in flight. */
  get accepting(): boolean {
    if (this.openedAtMs === undefined) return true;
    return this.pauseOver && !this.probing;
  }

  retryAfterSeconds(): number | undefined {
    if (this.openedAtMs === undefined) return undefined;
    return Math.max(1, Math.ceil((this.openedAtMs + this.opts.halfOpenAfterMs - this.now()) / 1000));
  }

  /** Runs `call` if the breaker takes it (the caller checked `accepting`); records how it ended. */
  async execute<T>(call: () => Promise<T>): Promise<T> {
    const probe = this.openedAtMs !== undefined;
    if (probe) this.probing = true;
    try {
      const value = await call();
      this.failures = 0;
      this.openedAtMs = undefined;
      return value;
    } catch (e) {
      if (isProviderCallError(e) && e.retryable) {
        this.failures++;
        if (probe || this.failures >= this.opts.consecutiveFailures) this.openedAtMs = this.now();
      }
      // Anything else is not the deployment's fault: a probe that ended so leaves it half-open for the next call.
      throw e;
    } finally {
      if (probe) this.probing = false;
    }
  }
}
