// Dashboard sessions: login, the session a token names, logout. Only the
// SHA-256 of a session token is stored (as the record's key); the record
// expires with the session. The CSRF token is derived from the session token
// (csrfTokenFor), never stored.
import type { Clock } from "../core/clock.ts";
import { isoTime } from "../core/clock.ts";
import type { TenancyConfig } from "../core/config.ts";
import { TroupeError } from "../core/errors.ts";
import { prefixedId } from "../core/ids.ts";
import type { DataStore, StoreOp } from "../core/data-store.ts";
import { csrfTokenFor, newSessionToken, sha256 } from "./key-format.ts";
import { verifyAgainstDummy, verifyPassword } from "./passwords.ts";
import { LoginThrottle } from "./login-throttle.ts";
import { keys } from "./records.ts";
import { TenancyService } from "./tenancy-service.ts";
import type { Session, StoredUser, User } from "./types.ts";
import { requireWellFormed } from "./well-formed.ts";

export interface SessionGrant {
  session_token: string;
  csrf_token: string;
  expires_at: string;
}

export function publicUser(user: StoredUser): User {
  return { id: user.id, email: user.email, name: user.name, created_at: user.created_at };
}

export class SessionService extends TenancyService {
  private readonly config: TenancyConfig;
  private readonly throttle: LoginThrottle;

  constructor(store: DataStore, config: TenancyConfig, clock: Clock) {
    super(store, clock);
    this.config = config;
    this.throttle = new LoginThrottle(store, config.loginThrottle, clock);
  }

  /** Throttled per account and per client address (login-throttle.ts). */
  async login(input: { email: string; password: string }, clientAddress: string) {
    requireWellFormed({ email: input.email, password: input.password });
    const attempt = await this.throttle.admit(input.email, clientAddress);
    const userId = await this.store.lookup(keys.email(input.email));
    const user = userId ? await this.records.user(userId) : undefined;
    const ok = user ? await verifyPassword(input.password, user.password_hash) : await verifyAgainstDummy(input.password);
    if (!user || !ok) throw new TroupeError("unauthorized", "email or password is wrong");
    await attempt.succeeded();
    const session = this.issue(user.id, this.clock.now());
    await this.store.apply(session.ops);
    return { user: publicUser(user), ...session.grant };
  }

  /** A new session for the user, as batch ops (signup writes it with the account). */
  issue(userId: string, now: number): { ops: StoreOp[]; grant: SessionGrant } {
    const token = newSessionToken();
    const ttlMs = this.config.sessionTtlSeconds * 1000;
    const session: Session = {
      id: prefixedId("ses", now),
      user_id: userId,
      created_at: isoTime(now),
      expires_at: isoTime(now + ttlMs),
    };
    return {
      ops: [{ op: "put", key: keys.session(sha256(token)), value: session, ttlMs }],
      grant: { session_token: token, csrf_token: csrfTokenFor(token), expires_at: session.expires_at },
    };
  }

  /** The session a token names, or undefined when unknown or expired. */
  async resolve(token: string): Promise<Session | undefined> {
    const session = await this.records.session(sha256(token));
    if (!session || Date.parse(session.expires_at) <= this.clock.now()) return undefined;
    return session;
  }

  async logout(tokenHash: string): Promise<void> {
    await this.store.apply([{ op: "delete", key: keys.session(tokenHash) }]);
  }
}
