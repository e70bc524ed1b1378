// How the gateway answers a request that failed: the one error body (or a
// compatibility mount's dialect), the rate-limit headers of a refusal, the
// last-resort 500, and the refusal of ambiguous framing. Shared by the route
// runner (route-runner.ts) and the server's own handlers (server.ts,
// unrouted.ts).
import type { HttpResponse } from "uWebSockets.js";
import { errorBody, isTroupeError, TroupeError } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import { errorAnswer, writeResponse, type CapturedRequest, type ResponseState } from "./http-io.ts";
import { framingError, type FramingProblem } from "./request-guards.ts";
import type { RouteDialect } from "./route.ts";

export interface ErrorResponder {
  /** Answers `error` (a TroupeError as itself, anything else logged and answered 500). */
  sendError(res: HttpResponse, state: ResponseState, requestId: string, error: unknown, req?: CapturedRequest, closeConnection?: boolean, dialect?: RouteDialect): void;
  /**
   * The last resort: whatever escaped the pipeline (a throw in a uWS
   * callback, an error body that cannot be serialized) is logged and
   * answered with a plain 500, never left to end the process.
   */
  guard(res: HttpResponse, state: ResponseState, requestId: string, error: unknown): void;
  /**
   * Refused, and the connection closed: what follows on it cannot be
   * trusted to be a request. Answered after uWS has parsed what it already
   * holds: a request pipelined behind this one then finds this response
   * pending, and uWS closes the connection without serving it (answering
   * at once would let it be served). `answered` runs once the refusal is written.
   */
  refuseFraming(res: HttpResponse, state: ResponseState, requestId: string, framing: FramingProblem, dialect?: RouteDialect, answered?: () => void): void;
}

export function createErrorResponder(log: Logger): ErrorResponder {
  const sendError: ErrorResponder["sendError"] = (res, state, requestId, error, req, closeConnection = false, dialect) => {
    // The client went away: nothing to answer and nothing to report (its abort surfaces as an error here).
    if (state.aborted) return;
    let troupe: TroupeError;
    if (isTroupeError(error)) troupe = error;
    else {
      log.error("unhandled error", { request_id: requestId, path: req?.url, error });
      troupe = new TroupeError("internal_error");
    }
    const answer = errorAnswer(troupe, requestId, dialect);
    // Refused at admission (429): the error carries the window; later, the state does.
    if (troupe.headers && !state.headers) answer.headers.push(...(dialect?.rateLimitHeaders ? dialect.rateLimitHeaders(troupe.headers) : troupe.headers));
    writeResponse(res, state, answer.status, answer.headers, answer.body, closeConnection);
  };
  return {
    sendError,
    guard(res, state, requestId, error) {
      log.error("request handling failed", { request_id: requestId, error });
      try {
        writeResponse(res, state, 500, [["content-type", "application/json"], ["x-request-id", requestId]], JSON.stringify(errorBody(new TroupeError("internal_error"), requestId)));
      } catch (writeError) {
        log.error("could not answer a failed request", { request_id: requestId, error: writeError });
      }
    },
    refuseFraming(res, state, requestId, framing, dialect, answered) {
      const error = framingError(framing);
      setImmediate(() => {
        sendError(res, state, requestId, error, undefined, true, dialect);
        answered?.();
      });
    },
  };
}
