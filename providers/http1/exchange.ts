// One upstream request's life in the HTTP/1.1 client (client.ts): an
// Exchange waits for a connection from its origin's pool, runs on it and
// settles once (complete, failed or aborted by the caller's signal); a
// BodyStream hands a streamed response body to its reader, pausing the
// socket when the reader falls behind.
import type { Connection, ExchangeSink } from "./connection.ts";
import type { ResponseHead } from "./response-parser.ts";

/** One request's life: waiting for a connection, then on one, then settled. */
export class Exchange implements ExchangeSink {
  private readonly signal: AbortSignal;
  private readonly onFail: (error: Error) => void;
  private readonly handlers: Pick<ExchangeSink, "onHead" | "onBody" | "onComplete">;
  private conn: Connection | undefined;
  private settled = false;
  /** Set by the pool while this waits for a connection. */
  cancelWait: (() => void) | undefined;
  private readonly onAbort = (): void => this.fail(abortReason(this.signal));

  constructor(signal: AbortSignal, onFail: (error: Error) => void, handlers: Pick<ExchangeSink, "onHead" | "onBody" | "onComplete">) {
    this.signal = signal;
    this.onFail = onFail;
    this.handlers = handlers;
    signal.addEventListener("abort", this.onAbort, { once: true });
  }

  get done(): boolean {
    return this.settled;
  }

  run(conn: Connection, head: string, body: string | Buffer | null, headRequest: boolean): void {
    if (this.settled) {
      // Gave up while waiting: hand the connection straight back.
      conn.handBack();
      return;
    }
    this.conn = conn;
    conn.start(head, body, this, headRequest);
  }

  onHead(head: ResponseHead): void {
    if (!this.settled) this.handlers.onHead(head);
  }

  onBody(chunk: Buffer): void {
    if (!this.settled) this.handlers.onBody(chunk);
  }

  onComplete(): void {
    if (!this.settled) this.handlers.onComplete();
  }

  onError(error: Error): void {
    this.fail(error);
  }

  pause(): void {
    this.conn?.pause();
  }

  resume(): void {
    this.conn?.resume();
  }

  /** Ends the exchange successfully (the response is complete). */
  settle(): void {
    if (this.settled) return;
    this.settled = true;
    this.signal.removeEventListener("abort", this.onAbort);
  }

  /** Ends the exchange with an error, closing its connection if the response was still coming. */
  fail(error: Error): void {
    if (this.settled) return;
    this.settled = true;
    this.signal.removeEventListener("abort", this.onAbort);
    this.cancelWait?.();
    const conn = this.conn;
    this.conn = undefined;
    if (conn?.busy) conn.abort();
    this.onFail(error);
  }
}

/** The response body as an async iterable, pausing the socket when the reader falls behind. */
export class BodyStream implements AsyncIterable<Buffer> {
  private static readonly highWaterBytes = 1024 * 1024;
  private readonly signal: AbortSignal;
  private readonly queue: Buffer[] = [];
  private queuedBytes = 0;
  private ended = false;
  private error: Error | undefined;
  private paused = false;
  private waiter: { resolve: (r: IteratorResult<Buffer>) => void; reject: (e: Error) => void } | undefined;
  private exchange: Exchange | undefined;

  constructor(signal: AbortSignal) {
    this.signal = signal;
  }

  bind(exchange: Exchange): void {
    this.exchange = exchange;
  }

  push(chunk: Buffer): void {
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      w.resolve({ value: chunk, done: false });
      return;
    }
    this.queue.push(chunk);
    this.queuedBytes += chunk.length;
    if (!this.paused && this.queuedBytes > BodyStream.highWaterBytes) {
      this.paused = true;
      this.exchange?.pause();
    }
  }

  end(): void {
    this.ended = true;
    this.wake();
  }

  fail(error: Error): void {
    if (this.ended) return;
    this.error = error;
    this.wake();
  }

  [Symbol.asyncIterator](): AsyncIterator<Buffer> {
    return {
      next: () => this.next(),
      return: () => {
        // The reader stopped early: the rest of the response is not wanted.
        if (!this.ended && !this.error) this.exchange?.fail(abortReason(this.signal, "the response body was not read to its end"));
        this.queue.length = 0;
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }

  private next(): Promise<IteratorResult<Buffer>> {
    const chunk = this.queue.shift();
    if (chunk) {
      this.queuedBytes -= chunk.length;
      if (this.paused && this.queuedBytes < BodyStream.highWaterBytes / 2) {
        this.paused = false;
        this.exchange?.resume();
      }
      return Promise.resolve({ value: chunk, done: false });
    }
    if (this.error) return Promise.reject(this.error);
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => (this.waiter = { resolve, reject }));
  }

  private wake(): void {
    const w = this.waiter;
    if (!w) return;
    this.waiter = undefined;
    if (this.error) w.reject(this.error);
    else w.resolve({ value: undefined, done: true });
  }
}

/** The signal's own reason when it is an Error, else an Error saying what happened. */
export function abortReason(signal: AbortSignal, fallback = "the request was aborted"): Error {
  return signal.aborted && signal.reason instanceof Error ? signal.reason : new Error(fallback);
}
