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
  /** A query parameter that may carry the API key too (Google's `?key=`, on the /gemini mount). */
  apiKeyQuery?: string;
}

/** Per-key limits; synchronous when the count is in process (the hot path). Returns the window for the headers. */
export interface RateLimiter {
  checkRateLimit(key: ApiKeyRecord): RateLimitWindow | void | Promise<RateLimitWindow | void>;
  /** A key's max_concurrent: admits one more call in flight (429 past it); the function returned ends it. */
  enterCall?(key: ApiKeyRecord): (() => void) | undefined;
  /** A key's token limit: reserves an AI call's estimate (429 when the window is full); the function returned releases what was not billed. */
  reserveTokens?(key: ApiKeyRecord, requestId: string, tokens: number): (() => void) | undefined | Promise<(() => void) | undefined>;
}

export interface Admission {
  /**
   * Resolves the request's credential for `policy` and runs the checks, or
   * throws the TroupeError to answer with (401, 403, 429). Synchronous when
   * nothing needs I/O (a warm API key under its limit).
   */
  admit<A extends AuthMode>(policy: AdmissionPolicy<A>, method: string, headers: Record<string, string>, query?: string): AuthFor<A> | Promise<AuthFor<A>>;
  /**
   * For an HTTP call admitted with an API key that has a max_concurrent: one
   * more call in flight, or 429 with Retry-After. Returns what ends it (the
   * route runner calls it as the request ends); undefined when nothing is counted.
   */
  enterCall?(auth: AuthContext): (() => void) | undefined;
  /**
   * For an AI call (a billed route) by an API key with a token limit, once
   * its body is read: reserves its estimated tokens, or 429 with Retry-After.
   * Returns what releases the unbilled rest (the route runner calls it as the request ends).
   */
  reserveTokens?(auth: AuthContext, requestId: string, tokens: number): (() => void) | undefined | Promise<(() => void) | undefined>;
}

export function createAdmission(authenticator: Authenticator, rateLimiter: RateLimiter): Admission {
  const afterCredential = (policy: AdmissionPolicy, auth: AuthContext): AuthContext | Promise<AuthContext> => {
    if (!takes(policy.auth, auth)) throw new TroupeError("forbidden", `this endpoint does not take a ${auth.kind} credential`);
    if (auth.kind !== "api_key") return auth;
    let window: ReturnType<RateLimiter["checkRateLimit"]>;
    try {
      // In order: scope first, so a key without the scope does not spend its rate limit.
      checkScope(policy, auth.key);
      window = rateLimiter.checkRateLimit(auth.key);
    } catch (error) {
      throw refusedFor(error, auth);
    }
    if (window instanceof Promise) return window.then((w) => withWindow(auth, w), (error: unknown) => Promise.reject(refusedFor(error, auth)));
    return withWindow(auth, window);
  };

  return {
    admit<A extends AuthMode>(policy: AdmissionPolicy<A>, method: string, headers: Record<string, string>, query?: string) {
      const resolved = authenticator.authenticate(policy, method, headers, query);
      const admitted = resolved instanceof Promise ? resolved.then((auth) => afterCredential(policy, auth)) : afterCredential(policy, resolved);
      // Sound: afterCredential refused every credential kind `policy.auth` does not take.
      return admitted as AuthFor<A> | Promise<AuthFor<A>>;
    },
    enterCall(auth) {
      return auth.kind === "api_key" ? rateLimiter.enterCall?.(auth.key) : undefined;
    },
    reserveTokens(auth, requestId, tokens) {
      return auth.kind === "api_key" && auth.key.token_limit_per_minute !== null ? rateLimiter.reserveTokens?.(auth.key, requestId, tokens) : undefined;
    },
  };
}

// A refusal after the key was resolved (its scope, its rate limit) still
// belongs to that key: the request log writes the refused call's entry under it.
const refusedKeys = new WeakMap<object, ApiKeyAuth>();

function refusedFor(error: unknown, auth: ApiKeyAuth): unknown {
  if (typeof error === "object" && error !== null) refusedKeys.set(error, auth);
  return error;
}

/** The API key a refused admission had resolved (429 rate_limited, 403 insufficient_scope); undefined otherwise. */
export function refusedKeyOf(error: unknown): ApiKeyAuth | undefined {
  return typeof error === "object" && error !== null ? refusedKeys.get(error) : undefined;
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
