// Server-Sent Events on a uWS response, backpressure-aware: when the socket
// buffer is full, send() waits for onWritable before the caller produces
// more, so a slow client slows the upstream instead of growing memory.
//
// The first event goes out at once (time to first byte). Later events are
// gathered until the end of the current event-loop turn and leave in one
// write: an upstream read that carries several events (common when a
// provider is fast or the network batches) then costs one send(2) instead of
// one per event, and [DONE] rides with the last of them. The delay this adds
// is only the rest of the current turn, never a timer.
//
// The same writer frames events as one streamed JSON array when asked
// (`json-array`: "[" before the first, "," between, "]" at the end), as
// Gemini's streamGenerateContent answers without alt=sse.
import type { HttpResponse } from "uWebSockets.js";
import type { SseWriter, StreamFraming } from "./route.ts";
import type { ResponseState } from "./http-io.ts";

/** The subset of uWS's HttpResponse the writer uses (tests drive it with a fake). */
export type SseResponse = Pick<HttpResponse, "cork" | "writeStatus" | "writeHeader" | "write" | "end" | "onWritable">;

export function openSse(res: SseResponse, state: ResponseState, requestId: string, headers: readonly [string, string][] = [], framing: StreamFraming = "sse"): SseWriter {
  const jsonArray = framing === "json-array";
  /** Events sent so far (a JSON array's separators). */
  let sent = 0;
  let started = false;
  let pending = "";
  let flushScheduled = false;
  /** Set while the socket is full; senders wait on it. */
  let writable: Promise<void> | undefined;
  let wake: (() => void) | undefined;

  const start = (): void => {
    started = true;
    state.status = 200;
    state.firstByteMs = performance.now();
    res.writeStatus("200 OK");
    res.writeHeader("content-type", jsonArray ? "application/json; charset=utf-8" : "text/event-stream; charset=utf-8");
    res.writeHeader("cache-control", "no-cache");
    res.writeHeader("x-request-id", requestId);
    res.writeHeader("x-accel-buffering", "no");
    if (state.headers) for (const [name, value] of state.headers) res.writeHeader(name, value);
    for (const [name, value] of headers) res.writeHeader(name, value);
  };
  state.onAbort(() => wake?.());

  const flush = (): void => {
    flushScheduled = false;
    if (state.aborted || state.done || pending === "") return;
    const frames = pending;
    pending = "";
    let ok = true;
    res.cork(() => {
      if (!started) start();
      ok = res.write(frames);
    });
    state.bytes += Buffer.byteLength(frames);
    if (!ok && !writable) {
      writable = new Promise<void>((resolve) => {
        wake = () => {
          writable = undefined;
          wake = undefined;
          resolve();
        };
        res.onWritable(() => {
          wake?.();
          return true;
        });
      });
    }
  };

  const finish = (last: string): void => {
    if (state.aborted || state.done) return;
    state.done = true;
    const frames = `${pending}${last}`;
    pending = "";
    res.cork(() => {
      if (!started) start();
      res.end(frames);
    });
    state.bytes += Buffer.byteLength(frames);
  };

  const closeArray = (): string => (sent === 0 ? "[]" : "]");

  return {
    get closed() {
      return state.aborted || state.done;
    },
    async send(data: unknown, event?: string): Promise<void> {
      if (state.aborted || state.done) return;
      if (jsonArray) pending += `${sent === 0 ? "[" : ",\r\n"}${JSON.stringify(data)}`;
      else {
        if (event !== undefined) pending += `event: ${event}\n`;
        pending += `data: ${JSON.stringify(data)}\n\n`;
      }
      sent += 1;
      if (!started) flush();
      else if (!flushScheduled) {
        flushScheduled = true;
        setImmediate(flush);
      }
      if (writable) await writable;
    },
    done(): void {
      finish(jsonArray ? closeArray() : "data: [DONE]\n\n");
    },
    end(): void {
      finish(jsonArray ? closeArray() : "");
    },
  };
}
