// The one step that admits a request (so no route can skip a check), shared by the HTTP
// routes (server.ts) and the WebSocket upgrades (ws-route.ts): the
// credential the route's auth mode takes, then for API keys the route's
// scope and the key's rate limits, whose window the answer carries (the
// X-RateLimit-* headers). Project budgets need the request body (a call's
// reservation is its estimated cost), so they are checked by the AI routes
// once the body is parsed (gateway/billed-call.ts), still before any
// provider call.
//
// The answer is typed by the auth mode (`AuthFor`): a session route gets a
// SessionAuth, an api_key route an ApiKeyAuth. This is the only place the
// credential kind is checked against the declaration; handlers rely on it.
import { TroupeError } from "../core/errors.ts";
import type { RateLimitWindow } from "../tenancy/key-rate-limit.ts";
import type { ApiKeyRecord } from "../tenancy/types.ts";
import type { ApiKeyAuth, AuthContext, SessionAuth } from "./auth-context.ts";
import type { Authenticator } from "./authenticate.ts";
import type { AuthMode, Scope } from "./route.ts";

/** The credential a handler gets for its route's auth mode. */
export type AuthFor<A extends AuthMode> = A extends "session"
  ? SessionAuth
  : A extends "api_key"
    ? ApiKeyAuth
    : A extends "any"
      ? SessionAuth | ApiKeyAuth
      : Extract<AuthContext, { kind: "none" }>;

/** What admission reads from a route declaration (HTTP or WebSocket). */
export interface AdmissionPolicy<A extends AuthMode = AuthMode> {
  auth: A;
  /** Public routes that must still refuse an API key presented to them (login, signup). */
  refusesApiKeys?: boolean;
  /** For API keys: the category the key's scopes must include; "all": every category (an unscoped key). */
  scope?: Scope | "all";
  /** A header that may carry the API key instead of Authorization: Bearer (a compatibility mount's). */
  apiKeyHeader?: string;
}

/** Per-key limits; synchronous when the count is in process (the hot path). Returns the window for the headers. */
export interface RateLimiter {
  checkRateLimit(key: ApiKeyRecord): RateLimitWindow | void | Promise<RateLimitWindow | void>;
}

export interface Admission {
  /**
   * Resolves the request's credential for `policy` and runs the checks, or
   * throws the TroupeError to answer with (401, 403, 429). Synchronous when
   * nothing needs I/O (a warm API key under its limit).
   */
  admit<A extends AuthMode>(policy: AdmissionPolicy<A>, method: string, headers: Record<string, string>): AuthFor<A> | Promise<AuthFor<A>>;
}

export function createAdmission(authenticator: Authenticator, rateLimiter: RateLimiter): Admission {
  const afterCredential = (policy: AdmissionPolicy, auth: AuthContext): AuthContext | Promise<AuthContext> => {
    if (!takes(policy.auth, auth)) throw new TroupeError("forbidden", `this endpoint does not take a ${auth.kind} credential`);
    if (auth.kind !== "api_key") return auth;
    // In order: scope first, so a key without the scope does not spend its rate limit.
    checkScope(policy, auth.key);
    const window = rateLimiter.checkRateLimit(auth.key);
    if (window instanceof Promise) return window.then((w) => withWindow(auth, w));
    return withWindow(auth, window);
  };

  return {
    admit<A extends AuthMode>(policy: AdmissionPolicy<A>, method: string, headers: Record<string, string>) {
      const resolved = authenticator.authenticate(policy, method, headers);
      const admitted = resolved instanceof Promise ? resolved.then((auth) => afterCredential(policy, auth)) : afterCredential(policy, resolved);
      // Sound: afterCredential refused every credential kind `policy.auth` does not take.
      return admitted as AuthFor<A> | Promise<AuthFor<A>>;
    },
  };
}

/** A new auth object per request: the authenticator's may be shared. */
function withWindow(auth: ApiKeyAuth, window: RateLimitWindow | void): ApiKeyAuth {
  return window ? { kind: "api_key", key: auth.key, rateLimit: window } : auth;
}

function takes(mode: AuthMode, auth: AuthContext): boolean {
  switch (mode) {
    case "none":
      return auth.kind === "none";
    case "any":
      return auth.kind !== "none";
    default:
      return auth.kind === mode;
  }
}

/**
 * The second half of the scope check, for what only the body shows: the
 * scope `scope` (a route's `inputScope` answer: "vision" for image input)
 * asks of an API key, once the body is parsed. It runs after the rate limit
 * (the body is read after admission), before billing and any provider call,
 * and refuses exactly as the route scope does: 403 insufficient_scope.
 */
export function checkInputScope(auth: AuthContext, scope: Scope | undefined): void {
  if (scope && auth.kind === "api_key") checkScope({ auth: "api_key", scope }, auth.key, " (this request's input needs it)");
}

function checkScope(policy: AdmissionPolicy, key: ApiKeyRecord, why = ""): void {
  const { scope } = policy;
  // A key with no scopes may call every category.
  if (!scope || key.scopes.length === 0 || (scope !== "all" && key.scopes.includes(scope))) return;
  const message = scope === "all" ? `this endpoint needs an API key that grants every category (an empty scope list); this key's scopes are ${key.scopes.join(", ")}` : `this API key's scopes (${key.scopes.join(", ")}) do not include "${scope}"${why}`;
  throw new TroupeError("insufficient_scope", message, {
    details: { required_scope: scope, key_scopes: key.scopes },
  });
}
