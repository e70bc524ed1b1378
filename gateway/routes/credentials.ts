// The user id of a session-authenticated request (the route's auth mode
// already guarantees a session; this narrows the type).
import { TroupeError } from "../../core/errors.ts";
import type { AuthContext } from "../auth-context.ts";

export function sessionUser(auth: AuthContext): string {
  if (auth.kind !== "session") throw new TroupeError("forbidden", "this endpoint takes a dashboard session");
  return auth.userId;
}
