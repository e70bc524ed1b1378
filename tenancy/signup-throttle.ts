// Signup throttling per client address: each signup writes an account, an
// organization, a project, two environments and a key, and one address made
// 200 of them in 6.4 s. A fixed window counted in the data store (shared by
// every replica on Redis, exact: one atomic increment); past the limit, 429
// with Retry-After until the window ends. Attempts are counted when
// admitted, so parallel signups cannot slip through together; an attempt
// for an email already taken counts too (it is also an existence probe).
import type { TenancyConfig } from "../core/config.ts";
import { TroupeError } from "../core/errors.ts";
import type { DataStore } from "../core/data-store.ts";

export class SignupThrottle {
  private readonly store: DataStore;
  private readonly config: TenancyConfig["signupThrottle"];

  constructor(store: DataStore, config: TenancyConfig["signupThrottle"]) {
    this.store = store;
    this.config = config;
  }

  /** Counts one signup for the address, or throws 429 with the time until its window ends. */
  async admit(clientAddress: string): Promise<void> {
    const { count, resetInMs } = await this.store.hit(`signup:address:${clientAddress}`, this.config.windowMs);
    if (count <= this.config.perAddress) return;
    const seconds = Math.max(1, Math.ceil(resetInMs / 1000));
    throw new TroupeError("rate_limited", `too many signups from this address (${this.config.perAddress} per ${windowText(this.config.windowMs)}); try again in ${seconds} s`, {
      retryAfterSeconds: seconds,
    });
  }
}

function windowText(ms: number): string {
  if (ms % 3600_000 === 0) return `${ms / 3600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${ms / 1000} s`;
}
