// Per-provider health for the router: a cockatiel circuit breaker (opens
// after N consecutive retryable failures, half-opens after a pause, one
// probe call decides) and per-model latency as an EWMA for `latency` routing.
import { circuitBreaker, CircuitState, ConsecutiveBreaker, handleWhen, type CircuitBreakerPolicy } from "cockatiel";
import { isProviderCallError } from "./errors.ts";

export interface BreakerOptions {
  /** Consecutive retryable failures that open the breaker. */
  consecutiveFailures: number;
  /** How long an open breaker refuses calls before letting one probe through. */
  halfOpenAfterMs: number;
}

/** The breakers' settings with their defaults filled in (the router's and its deployments' breakers take the same). */
export function breakerOptionsOf(opts: Partial<BreakerOptions> = {}): BreakerOptions {
  // 5 failures in a row, 30 s pause: long enough to shed load from a failing provider, short enough to notice recovery.
  return { consecutiveFailures: opts.consecutiveFailures ?? 5, halfOpenAfterMs: opts.halfOpenAfterMs ?? 30_000 };
}

/** What the planner reads of a provider's health: a breaker's, or a deployment pool's over its deployments. */
export interface HealthView {
  readonly accepting: boolean;
  readonly state: "closed" | "open" | "half_open";
  retryAfterSeconds(): number | undefined;
}

export class ProviderHealth implements HealthView {
  readonly breaker: CircuitBreakerPolicy;
  private openedAtMs: number | undefined;
  private readonly halfOpenAfterMs: number;
  private readonly now: () => number;

  constructor(opts: BreakerOptions, now: () => number = Date.now) {
    this.halfOpenAfterMs = opts.halfOpenAfterMs;
    this.now = now;
    // Only provider faults count: a caller's abort or a rejected request says nothing about health.
    this.breaker = circuitBreaker(
      handleWhen((e) => isProviderCallError(e) && e.retryable),
      { halfOpenAfter: opts.halfOpenAfterMs, breaker: new ConsecutiveBreaker(opts.consecutiveFailures) },
    );
    this.breaker.onBreak(() => {
      this.openedAtMs = this.now();
    });
    this.breaker.onReset(() => {
      this.openedAtMs = undefined;
    });
  }

  /** False while the breaker is open and its pause has not elapsed (a probe may then go through). */
  get accepting(): boolean {
    const state = this.breaker.state;
    if (state === CircuitState.Isolated) return false;
    if (state === CircuitState.Open) return this.openedAtMs !== undefined && this.now() - this.openedAtMs >= this.halfOpenAfterMs;
    return true;
  }

  get state(): "closed" | "open" | "half_open" {
    const s = this.breaker.state;
    return s === CircuitState.Closed ? "closed" : s === CircuitState.HalfOpen ? "half_open" : "open";
  }

  /** Seconds until an open breaker lets a probe through. */
  retryAfterSeconds(): number | undefined {
    if (this.openedAtMs === undefined) return undefined;
    return Math.max(1, Math.ceil((this.openedAtMs + this.halfOpenAfterMs - this.now()) / 1000));
  }
}

/** Exponentially weighted moving average of latency per model (α = 0.2: about the last 10 calls). */
export class LatencyTracker {
  private readonly ewmaMs = new Map<string, number>();
  private readonly alpha: number;

  constructor(alpha = 0.2) {
    this.alpha = alpha;
  }

  record(modelId: string, ms: number): void {
    const prev = this.ewmaMs.get(modelId);
    this.ewmaMs.set(modelId, prev === undefined ? ms : prev + this.alpha * (ms - prev));
  }

  /** Undefined until the model has served once. */
  get(modelId: string): number | undefined {
    return this.ewmaMs.get(modelId);
  }
}
