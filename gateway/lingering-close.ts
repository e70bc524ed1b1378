// Refusing a request body the client is still sending, so that the client
// reads the refusal (a "lingering close", as Apache and nginx do it).
//
// uWS's own way, end(body, closeConnection), shuts the socket at once; the
// kernel answers the bytes still arriving with a reset, and a client busy
// sending (Node's fetch, which the OpenAI SDK uses) reports EPIPE instead of
// the 413. So the status, the headers and all of the body but its last byte
// go out at once; the rest of the request is read and thrown away; the last
// byte follows once the client has sent everything. A client still sending
// after `maxBytes` more bytes or `maxMs` gets the last byte too, but reading
// stops (pause) and uWS closes the socket at its idle timeout (~10 s).
//
// Holding back one byte is what keeps `res` usable: uWS.js forbids touching
// a response once it is complete, and the pause must come before that. The
// byte is a newline after the JSON (JSON allows trailing whitespace).
import type { HttpResponse } from "uWebSockets.js";
import { statusLine } from "../core/http-status.ts";
import type { ResponseState } from "./http-io.ts";

export interface LingerLimits {
  /** How long to keep reading after the answer, in ms. */
  maxMs: number;
  /** How many more bytes to read and discard after the answer. */
  maxBytes: number;
}

// 2 s and 64 MiB: a client sending a 20 MiB body over a slow link finishes
// well within them; a client streaming forever costs at most this much.
export const lingerLimits: LingerLimits = Object.freeze({ maxMs: 2_000, maxBytes: 64 * 1024 * 1024 });

/** Receives the byte counts of the body chunks that keep arriving. */
export type Discard = (bytes: number, isLast: boolean) => void;

/** Answers now with `connection: close`; returns where the rest of the body goes. */
export function answerThenDiscard(
  res: HttpResponse,
  state: ResponseState,
  status: number,
  headers: [string, string][],
  body: string,
  limits: LingerLimits = lingerLimits,
): Discard {
  if (state.aborted || state.done) return () => undefined;
  state.done = true;
  state.status = status;
  const full = Buffer.from(body + "\n");
  state.bytes = full.length;
  res.cork(() => {
    res.writeStatus(statusLine(status));
    for (const [name, value] of headers) res.writeHeader(name, value);
    res.writeHeader("connection", "close");
    res.tryEnd(full.subarray(0, full.length - 1), full.length);
  });
  let discarded = 0;
  let finished = false;
  const finish = (stopReading: boolean): void => {
    if (finished) return;
    finished = true;
    clearTimeout(timer);
    if (state.aborted) return;
    res.cork(() => {
      if (stopReading) res.pause();
      const [, done] = res.tryEnd(full.subarray(res.getWriteOffset()), full.length);
      if (!done) res.onWritable((offset) => res.tryEnd(full.subarray(offset), full.length)[0]);
    });
  };
  const timer = setTimeout(() => finish(true), limits.maxMs);
  timer.unref();
  state.onAbort(() => {
    finished = true;
    clearTimeout(timer);
  });
  return (bytes, isLast) => {
    if (finished) return;
    discarded += bytes;
    if (isLast) finish(false);
    else if (discarded > limits.maxBytes) finish(true);
  };
}
