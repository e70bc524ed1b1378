// Turns a request's credential into an AuthContext for the route's auth
// mode. API keys and session tokens are told apart by their prefixes, so a
// credential of the wrong kind is a clear 403, an unknown one a 401.
import { timingSafeEqual } from "node:crypto";
import { TroupeError } from "../core/errors.ts";
import type { AccountService } from "../tenancy/accounts.ts";
import type { ApiKeyService } from "../tenancy/api-keys.ts";
import { csrfTokenFor, looksLikeApiKey, sessionTokenPrefix, sha256 } from "../tenancy/key-format.ts";
import type { AuthContext } from "./auth-context.ts";
import type { AuthMode } from "./route.ts";

export const sessionCookie = "troupe_session";
export const csrfCookie = "troupe_csrf";
export const csrfHeader = "x-csrf-token";

export interface Authenticator {
  /** Synchronous for a warm API key (the hot path), a promise otherwise. */
  authenticate(route: CredentialSpellings & { auth: AuthMode; refusesApiKeys?: boolean }, method: string, headers: Record<string, string>, query?: string): AuthContext | Promise<AuthContext>;
}

/** Where a route takes the API key besides Authorization: Bearer (a compatibility mount's own header, Google's `?key=`). */
export interface CredentialSpellings {
  apiKeyHeader?: string;
  apiKeyQuery?: string;
}

const safeMethods = new Set(["GET", "HEAD", "OPTIONS"]);

export function createAuthenticator(accounts: AccountService, apiKeys: ApiKeyService, keyPrefix: string): Authenticator {
  const sessionAuth = async (token: string, viaCookie: boolean): Promise<AuthContext> => {
    const session = await accounts.sessions.resolve(token);
    if (!session) throw new TroupeError("unauthorized", "the session is unknown, expired or logged out");
    return { kind: "session", userId: session.user_id, sessionId: session.id, tokenHash: sha256(token), csrfToken: csrfTokenFor(token), viaCookie };
  };

  return {
    authenticate(route, method, headers, query) {
      const bearer = route.apiKeyHeader === undefined && route.apiKeyQuery === undefined ? bearerToken(headers["authorization"]) : credentialOf(route, headers, query);
      const mode = route.auth;
      if (mode === "none") {
        if (route.refusesApiKeys && bearer !== undefined && looksLikeApiKey(bearer, keyPrefix)) {
          throw new TroupeError("forbidden", "this endpoint does not accept API keys");
        }
        return { kind: "none" };
      }
      if (bearer !== undefined) {
        if (looksLikeApiKey(bearer, keyPrefix)) {
          if (mode === "session") throw new TroupeError("forbidden", "this endpoint takes a dashboard session token, not an API key");
          const key = apiKeys.authenticate(bearer);
          return key instanceof Promise ? key.then((k): AuthContext => ({ kind: "api_key", key: k })) : { kind: "api_key", key };
        }
        if (bearer.startsWith(sessionTokenPrefix)) {
          if (mode === "api_key") throw new TroupeError("forbidden", "this endpoint takes an API key, not a session token");
          return sessionAuth(bearer, false);
        }
        throw new TroupeError("unauthorized", "the bearer credential is neither an API key nor a session token");
      }
      const cookieToken = mode === "api_key" ? undefined : cookieValue(headers["cookie"], sessionCookie);
      if (cookieToken !== undefined) {
        return sessionAuth(cookieToken, true).then((auth) => {
          if (auth.kind === "session" && !safeMethods.has(method) && !sameSecret(headers[csrfHeader], auth.csrfToken)) {
            throw new TroupeError("forbidden", `cookie-authenticated changes need the ${csrfHeader} header from login (CSRF protection)`);
          }
          return auth;
        });
      }
      throw new TroupeError(
        "unauthorized",
        mode === "api_key"
          ? `missing API key: send Authorization: Bearer <API key>${route.apiKeyHeader ? ` or ${route.apiKeyHeader}: <API key>` : ""}${route.apiKeyQuery ? ` or ?${route.apiKeyQuery}=<API key>` : ""}`
          : "missing credential: send Authorization: Bearer <session token> or the session cookie",
      );
    },
  };
}

/**
 * A route that also takes the key in its own header (the /anthropic mount's
 * x-api-key, the /gemini mount's x-goog-api-key) or query parameter
 * (Google's `?key=`): any of them, and when several are sent they must
 * agree, so a request never carries one credential that is checked and one
 * that is not. The parameter given twice is a 400, as a credential header
 * sent twice is (request-guards.ts).
 */
function credentialOf(route: CredentialSpellings, headers: Record<string, string>, query: string | undefined): string | undefined {
  const given: [string, string][] = [];
  const bearer = bearerToken(headers["authorization"]);
  if (bearer !== undefined) given.push(["Authorization", bearer]);
  // Present but empty is a (wrong) credential too, not an absent one.
  const own = route.apiKeyHeader === undefined ? undefined : headers[route.apiKeyHeader];
  if (own !== undefined && route.apiKeyHeader !== undefined) given.push([route.apiKeyHeader, own]);
  if (route.apiKeyQuery !== undefined && query) {
    const values = new URLSearchParams(query).getAll(route.apiKeyQuery);
    if (values.length > 1) {
      const message = `more than one ${route.apiKeyQuery} query parameter: send one credential`;
      throw new TroupeError("invalid_request", message, { details: [{ path: `query.${route.apiKeyQuery}`, message }] });
    }
    if (values[0] !== undefined) given.push([`?${route.apiKeyQuery}=`, values[0]]);
  }
  const [first, ...rest] = given;
  const other = rest.find(([, value]) => value !== first?.[1]);
  if (first && other) throw new TroupeError("unauthorized", `${other[0]} and ${first[0]} carry different credentials: send one`);
  return first?.[1];
}

function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  // Fast path for the common exact form; the regex handles case and spacing variants.
  if (header.startsWith("Bearer ") && header.indexOf(" ", 7) === -1 && header.length > 7) return header.slice(7);
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match || !match[1]) throw new TroupeError("unauthorized", "the Authorization header must be `Bearer <credential>`");
  return match[1];
}

export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() !== name) continue;
    try {
      return decodeURIComponent(part.slice(eq + 1).trim());
    } catch {
      return undefined; // malformed percent-encoding: as if absent (a 401), not a 500
    }
  }
  return undefined;
}

function sameSecret(presented: string | undefined, expected: string): boolean {
  if (!presented) return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
