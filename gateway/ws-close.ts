// How a WebSocket is closed with an error (docs/api/errors-and-limits.md,
// "WebSocket close codes"): code 4000 + the error's HTTP status (4401
// unauthorized, 4404 not_found, 4429 rate_limited…), so the one error
// registry decides the number, and a reason that is the error body's
// `error` object as JSON, `{code, message, request_id}`, cut to the 123
// bytes a close frame can carry. A client reads it as it reads an HTTP
// refusal.
import type { TroupeError } from "../core/errors.ts";

/** The close codes an error can be sent with: 4000 + an HTTP status. */
export const wsCloseBase = 4000;

/** A close frame's reason may hold 123 bytes (RFC 6455 §5.5: 125 minus the 2-byte code). */
const maxReasonBytes = 123;

export interface WsClose {
  code: number;
  reason: string;
}

export function wsCloseFor(error: TroupeError, requestId?: string): WsClose {
  return { code: wsCloseBase + error.status, reason: closeReason(error, requestId) };
}

function closeReason(error: TroupeError, requestId: string | undefined): string {
  const render = (message: string, id: string | undefined): string => JSON.stringify(id === undefined ? { code: error.code, message } : { code: error.code, message, request_id: id });
  const fits = (text: string): boolean => Buffer.byteLength(text) <= maxReasonBytes;
  // A caller-chosen request id may be 128 characters: without room for a message it is left out.
  const id = requestId !== undefined && fits(render("…", requestId)) ? requestId : undefined;
  const whole = render(error.message, id);
  if (fits(whole)) return whole;
  // Cut by characters (never inside a surrogate pair), then drop one more while the escaped JSON is too long.
  let chars = [...error.message];
  chars = chars.slice(0, Math.max(0, maxReasonBytes - Buffer.byteLength(render("", id)) - 1));
  while (chars.length > 0 && !fits(render(`${chars.join("")}…`, id))) chars.pop();
  return render(`${chars.join("")}…`, id);
}
