// API key and token formats. A key is `<prefix>_live_<secret>` or
// `<prefix>_test_<secret>` with 192 random bits; only its SHA-256 is stored.
// A fast hash is right here (unlike passwords): the secret is random and
// long, so there is nothing to brute-force, and lookups stay cheap.
import { createHash } from "node:crypto";
import { secretToken } from "../core/ids.ts";

export function newApiKey(prefix: string, live: boolean): string {
  return `${prefix}_${live ? "live" : "test"}_${secretToken(192)}`;
}

/** What a key listing shows: the kind and the first 4 secret characters. */
export function displayPrefix(key: string, prefix: string): string {
  const kindLength = prefix.length + "_live_".length;
  return key.slice(0, kindLength + 4);
}

export function looksLikeApiKey(token: string, prefix: string): boolean {
  return token.startsWith(`${prefix}_live_`) || token.startsWith(`${prefix}_test_`);
}

export function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

export const sessionTokenPrefix = "sess_";

/**
 * The CSRF token of a session, derived from its token rather than stored:
 * nothing in the store can be replayed as a CSRF token, any replica can
 * check it by recomputing, and the hash does not reveal the session token
 * (which stays in the httpOnly cookie) to the script that reads this one.
 */
export function csrfTokenFor(sessionToken: string): string {
  return createHash("sha256").update(`csrf:${sessionToken}`).digest("base64url");
}

export function newSessionToken(): string {
  return sessionTokenPrefix + secretToken(256);
}

export function newInvitationToken(): string {
  return "inv_" + secretToken(192);
}
