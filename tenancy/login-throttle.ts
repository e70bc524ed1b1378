// Login throttling: password guessing costs time. Failed logins are counted
// per (account, client address) pair and per client address in the data
// store, so every replica shares the counts (exact on Redis: the check and
// the count are one atomic step). Past the free failures, each further
// attempt must wait a delay that doubles up to a cap.
//
// Per pair, not per account: with one count per account, a stranger making
// one wrong guess every 200 ms from elsewhere kept the real user, with the
// right password from their own address, at 429 for 19 tries of 19. Now a
// stranger's failures slow only the stranger's own address (for that
// account, and past the address allowance for every account); the owner's
// address is never blocked by them. Guessing one account from many
// addresses is still bounded per address, and no wait is ever longer than
// the cap. A successful login clears its pair's count and takes back its
// address's attempt.
import type { Clock } from "../core/clock.ts";
import type { TenancyConfig } from "../core/config.ts";
import { TroupeError } from "../core/errors.ts";
import type { BackoffPolicy, DataStore } from "../core/data-store.ts";
import { sha256 } from "./key-format.ts";

export interface LoginAttempt {
  /** Call after the password checked out. */
  succeeded(): Promise<void>;
}

export class LoginThrottle {
  private readonly store: DataStore;
  private readonly clock: Clock;
  private readonly perPair: BackoffPolicy;
  private readonly perAddress: BackoffPolicy;

  constructor(store: DataStore, config: TenancyConfig["loginThrottle"], clock: Clock) {
    this.store = store;
    this.clock = clock;
    const shared = { baseMs: config.baseMs, capMs: config.capMs, forgetMs: Math.max(config.windowMs, config.capMs) };
    this.perPair = { free: config.freeFailuresPerAccount, ...shared };
    this.perAddress = { free: config.freeFailuresPerAddress, ...shared };
  }

  /** Counts one attempt for the (account, address) pair and the address, or throws 429 with the wait. */
  async admit(email: string, clientAddress: string): Promise<LoginAttempt> {
    const now = this.clock.now();
    // Hashed: the store never holds an email address in a key.
    const pairKey = `login:pair:${sha256(`${email.toLowerCase()}\n${clientAddress}`)}`;
    const addressKey = `login:address:${clientAddress}`;
    const byAddress = await this.store.backoffAttempt(addressKey, this.perAddress, now);
    if (!byAddress.admitted) throw tooManyFailures("from this address", byAddress.retryInMs);
    const byPair = await this.store.backoffAttempt(pairKey, this.perPair, now);
    if (!byPair.admitted) {
      await this.store.backoffRefund(addressKey); // no password was tried
      throw tooManyFailures("for this account from this address", byPair.retryInMs);
    }
    return {
      succeeded: async () => {
        await Promise.all([this.store.backoffClear(pairKey), this.store.backoffRefund(addressKey)]);
      },
    };
  }
}

function tooManyFailures(scope: string, retryInMs: number): TroupeError {
  const seconds = Math.max(1, Math.ceil(retryInMs / 1000));
  return new TroupeError("rate_limited", `too many failed logins ${scope}; try again in ${seconds} s`, { retryAfterSeconds: seconds });
}
