// Answers written while uWebSockets.js delivers another request.
//
// uWS holds the loop's one cork on the socket whose request (or body chunk)
// it is delivering, and Node runs the promise continuations started in that
// delivery before uWS lets go of it. An answer for another socket written
// then cannot be corked: uWS sends each of its pieces (the status line, every
// header's name, ": ", value and CRLF, the body) with a send() of its own,
// about 35 system calls instead of one. It happens whenever a delivery settles
// another request's promise: lmdb-js, for one, settles earlier commits inside
// a later put (every 8th), and a quarter of the agent turns' answers went out
// that way (bench/agents.ts, counted with `perf record -e
// syscalls:sys_enter_sendto`).
//
// So every uWS request handler and body callback first calls `delivering`,
// and a one-shot answer for any other response waits for the loop's check
// phase (setImmediate), where uWS holds no cork. The mark is cleared first
// thing in the check phase, and by a Node socket's callback that completes
// answers (`notDelivering`): a stale mark would only delay an answer a little.
import type { HttpResponse } from "uWebSockets.js";

let current: HttpResponse | undefined;
/** The clearing immediate is queued (it stays queued turn after turn while deliveries go on). */
let armed = false;
/** A delivery came after the clearing immediate was queued. */
let deliveredSince = false;
let deferred = 0;
const idleWaiters: (() => void)[] = [];

/**
 * Clears the mark in the check phase, then queues itself again while
 * deliveries go on: queued during a check phase, it runs first in the next
 * one, before the continuations of other immediates, which would otherwise
 * still see this poll phase's mark. With no delivery since, it stops, so an
 * idle loop can block.
 */
function clearInCheckPhase(): void {
  current = undefined;
  if (deliveredSince) {
    deliveredSince = false;
    setImmediate(clearInCheckPhase);
  } else {
    armed = false;
  }
}

/** Marks `res` as the response whose request uWS is delivering now (it holds the cork until this turn of the loop ends). */
export function delivering(res: HttpResponse): void {
  current = res;
  if (armed) {
    deliveredSince = true;
  } else {
    armed = true;
    setImmediate(clearInCheckPhase);
  }
}

/**
 * Called first in a Node I/O callback that completes answers (an upstream's
 * socket): no uWS delivery runs then, and an answer it completes should not
 * wait for the check phase because of a delivery earlier in this turn of the
 * loop. (Where no such call is made, the mark only delays an answer a little.)
 */
export function notDelivering(): void {
  current = undefined;
}

/**
 * Runs `write` now when `res` can be corked, else in the check phase, and
 * then only if the client is still there (uWS forbids touching an aborted
 * response).
 */
export function writeWhenCorkable(res: HttpResponse, state: { readonly aborted: boolean }, write: () => void): void {
  if (current === undefined || current === res) {
    write();
    return;
  }
  deferred += 1;
  setImmediate(() => {
    deferred -= 1;
    try {
      if (!state.aborted) write();
    } catch (error) {
      // Written at once, this error would have reached the request's pipeline, which logs it; here
      // nothing awaits the write, and an exception thrown from an immediate would end the process.
      process.emitWarning(`an answer written in the check phase failed: ${error instanceof Error ? error.message : String(error)}`, "TroupeDeferredWrite");
    } finally {
      if (deferred === 0) for (const w of idleWaiters.splice(0)) w();
    }
  });
}

/** Resolves once no answer waits for its check phase (a shutdown closes the app only after). */
export function deferredWritesDone(): Promise<void> {
  if (deferred === 0) return Promise.resolve();
  return new Promise((resolve) => idleWaiters.push(resolve));
}
