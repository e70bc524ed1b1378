// One deployment's own rpm/tpm limits over a sliding minute: requests are
// counted as they are sent, tokens once the answer says how many it used.
// Entries older than a minute are dropped as the window is read, so memory is
// bounded by the deployment's own traffic in one minute (at most rpm entries
// when rpm is set).
const windowMs = 60_000;

export interface WindowLimits {
  rpm?: number | undefined;
  tpm?: number | undefined;
}

export class MinuteWindow {
  private readonly requests: number[] = [];
  private readonly tokens: { at: number; n: number }[] = [];
  private tokenSum = 0;

  private readonly now: () => number;

  constructor(now: () => number) {
    this.now = now;
  }

  recordRequest(): void {
    this.requests.push(this.now());
  }

  recordTokens(n: number): void {
    if (n <= 0) return;
    this.tokens.push({ at: this.now(), n });
    this.tokenSum += n;
  }

  private prune(): void {
    const cutoff = this.now() - windowMs;
    let r = 0;
    while (r < this.requests.length && this.requests[r]! <= cutoff) r++;
    if (r > 0) this.requests.splice(0, r);
    let t = 0;
    while (t < this.tokens.length && this.tokens[t]!.at <= cutoff) this.tokenSum -= this.tokens[t++]!.n;
    if (t > 0) this.tokens.splice(0, t);
  }

  /** What is left of each limit this minute (undefined: no such limit). */
  headroom(limits: WindowLimits): { rpm: number | undefined; tpm: number | undefined } {
    this.prune();
    return {
      rpm: limits.rpm === undefined ? undefined : Math.max(0, limits.rpm - this.requests.length),
      tpm: limits.tpm === undefined ? undefined : Math.max(0, limits.tpm - this.tokenSum),
    };
  }

  /** True when another request fits both limits. */
  admits(limits: WindowLimits): boolean {
    const h = this.headroom(limits);
    return (h.rpm === undefined || h.rpm > 0) && (h.tpm === undefined || h.tpm > 0);
  }

  /** Ms until the oldest entry leaves the window (when a full deployment takes a request again). */
  msUntilRoom(): number {
    this.prune();
    const oldest = Math.min(this.requests[0] ?? Infinity, this.tokens[0]?.at ?? Infinity);
    return oldest === Infinity ? 0 : Math.max(0, oldest + windowMs - this.now());
  }
}
