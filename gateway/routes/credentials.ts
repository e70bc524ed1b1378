// Narrows a request's credential to the kind its route's auth mode already
// guarantees: the session's user id, or the API key record.
import { TroupeError } from "../../core/errors.ts";
import type { ApiKeyRecord } from "../../tenancy/types.ts";
import type { AuthContext } from "../auth-context.ts";

export function sessionUser(auth: AuthContext): string {
  if (auth.kind !== "session") throw new TroupeError("forbidden", "this endpoint takes a dashboard session");
  return auth.userId;
}

export function apiKeyOf(auth: AuthContext): ApiKeyRecord {
  if (auth.kind !== "api_key") throw new TroupeError("forbidden", "this endpoint takes an API key");
  return auth.key;
}
