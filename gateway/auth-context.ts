// Who is calling: the credential the gateway resolved for a request.
import type { RateLimitWindow } from "../tenancy/key-rate-limit.ts";
import type { ApiKeyRecord } from "../tenancy/types.ts";

export interface SessionAuth {
  kind: "session";
  userId: string;
  sessionId: string;
  /** SHA-256 of the presented token: how the session is found and logged out. */
  tokenHash: string;
  csrfToken: string;
  /** True when the credential came from the cookie (CSRF applies), false for a bearer token. */
  viaCookie: boolean;
}

export interface ApiKeyAuth {
  kind: "api_key";
  key: ApiKeyRecord;
  /** The key's rate-limit window after admitting this request (X-RateLimit-* headers). */
  rateLimit?: RateLimitWindow;
}

export type AuthContext = SessionAuth | ApiKeyAuth | { kind: "none" };
