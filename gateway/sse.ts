// Server-Sent Events on a uWS response, backpressure-aware: when the socket
// buffer is full, send() waits for onWritable before the caller produces
// more, so a slow client slows the upstream instead of growing memory.
import type { HttpResponse } from "uWebSockets.js";
import type { SseWriter } from "./route.ts";
import type { ResponseState } from "./http-io.ts";

export function openSse(res: HttpResponse, state: ResponseState, requestId: string): SseWriter {
  let waiting: (() => void) | undefined;
  let started = false;
  const start = (): void => {
    started = true;
    res.writeStatus("200 OK");
    res.writeHeader("content-type", "text/event-stream; charset=utf-8");
    res.writeHeader("cache-control", "no-cache");
    res.writeHeader("x-request-id", requestId);
    res.writeHeader("x-accel-buffering", "no");
  };
  state.onAbort(() => waiting?.());
  const write = (frame: string): boolean => {
    let ok = true;
    res.cork(() => {
      if (!started) start();
      ok = res.write(frame);
    });
    return ok;
  };
  return {
    get closed() {
      return state.aborted || state.done;
    },
    async send(data: unknown): Promise<void> {
      if (state.aborted || state.done) return;
      if (write(`data: ${JSON.stringify(data)}\n\n`)) return;
      await new Promise<void>((resolve) => {
        waiting = resolve;
        res.onWritable(() => {
          waiting = undefined;
          resolve();
          return true;
        });
      });
    },
    done(): void {
      if (state.aborted || state.done) return;
      state.done = true;
      res.cork(() => {
        if (!started) start();
        res.end("data: [DONE]\n\n");
      });
    },
  };
}
