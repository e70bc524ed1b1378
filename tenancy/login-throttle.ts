// Login throttling: password guessing costs time. Failed logins are counted
// per account (the email, hashed) and per client address in the data store,
// so every replica shares the counts (exact on Redis: the check and the
// count are one atomic step). Past the free failures, each further attempt
// must wait a delay that doubles up to a cap, so a stranger can slow an
// account down but never lock it for longer than the cap. A successful
// login clears its account's count and takes back its address's attempt.
import type { Clock } from "../core/clock.ts";
import type { TenancyConfig } from "../core/config.ts";
import { TroupeError } from "../core/errors.ts";
import type { BackoffPolicy, DataStore } from "./data-store.ts";
import { sha256 } from "./key-format.ts";

export interface LoginAttempt {
  /** Call after the password checked out. */
  succeeded(): Promise<void>;
}

export class LoginThrottle {
  private readonly store: DataStore;
  private readonly clock: Clock;
  private readonly perAccount: BackoffPolicy;
  private readonly perAddress: BackoffPolicy;

  constructor(store: DataStore, config: TenancyConfig["loginThrottle"], clock: Clock) {
    this.store = store;
    this.clock = clock;
    const shared = { baseMs: config.baseMs, capMs: config.capMs, forgetMs: Math.max(config.windowMs, config.capMs) };
    this.perAccount = { free: config.freeFailuresPerAccount, ...shared };
    this.perAddress = { free: config.freeFailuresPerAddress, ...shared };
  }

  /** Counts one attempt for the account and the address, or throws 429 with the wait. */
  async admit(email: string, clientAddress: string): Promise<LoginAttempt> {
    const now = this.clock.now();
    const accountKey = `login:account:${sha256(email.toLowerCase())}`;
    const addressKey = `login:address:${clientAddress}`;
    const byAddress = await this.store.backoffAttempt(addressKey, this.perAddress, now);
    if (!byAddress.admitted) throw tooManyFailures("from this address", byAddress.retryInMs);
    const byAccount = await this.store.backoffAttempt(accountKey, this.perAccount, now);
    if (!byAccount.admitted) {
      await this.store.backoffRefund(addressKey); // no password was tried
      throw tooManyFailures("for this account", byAccount.retryInMs);
    }
    return {
      succeeded: async () => {
        await Promise.all([this.store.backoffClear(accountKey), this.store.backoffRefund(addressKey)]);
      },
    };
  }
}

function tooManyFailures(scope: string, retryInMs: number): TroupeError {
  const seconds = Math.max(1, Math.ceil(retryInMs / 1000));
  return new TroupeError("rate_limited", `too many failed logins ${scope}; try again in ${seconds} s`, { retryAfterSeconds: seconds });
}
