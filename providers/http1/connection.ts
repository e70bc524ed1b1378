// One keep-alive HTTP/1.1 connection to an upstream, carrying one exchange
// at a time (no pipelining). It writes the request, feeds the response parser
// and reports to the exchange's sink; once a response is complete it goes
// back to its pool, or is closed when the upstream asked for that.
import type { Socket } from "node:net";
import { notDelivering } from "../../core/uws-delivery.ts";
import { HttpParseError, ResponseParser, type ResponseHead } from "./response-parser.ts";

/** Receives one response; exactly one of onComplete / onError ends it. */
export interface ExchangeSink {
  onHead(head: ResponseHead): void;
  onBody(chunk: Buffer): void;
  onComplete(): void;
  onError(error: Error): void;
}

export interface ConnectionOwner {
  /** The response is complete and the connection can take another request. */
  release(conn: Connection): void;
  /** The connection is closed for good. */
  remove(conn: Connection): void;
}

export class ConnectionClosedError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ConnectionClosedError";
  }
}

export class Connection {
  readonly socket: Socket;
  private readonly owner: ConnectionOwner;
  private readonly maxHeaderBytes: number;
  private parser: ResponseParser | undefined;
  private sink: ExchangeSink | undefined;
  private closed = false;
  /** Upstream's `Keep-Alive: timeout=` hint, in ms, if it sent one. */
  idleHintMs: number | undefined;
  /** When the pool may close it (performance.now() ms), while idle. */
  idleUntilMs = 0;

  constructor(socket: Socket, owner: ConnectionOwner, maxHeaderBytes: number) {
    this.socket = socket;
    this.owner = owner;
    this.maxHeaderBytes = maxHeaderBytes;
    socket.on("data", (data: Buffer) => this.onData(data));
    socket.on("error", (error: Error) => this.close(error));
    socket.on("end", () => this.onEnd());
    socket.on("close", () => this.close(undefined));
  }

  get busy(): boolean {
    return this.sink !== undefined;
  }

  /** Sends one request; the response goes to `sink`. */
  start(head: string, body: string | Buffer | null, sink: ExchangeSink, headRequest: boolean): void {
    this.sink = sink;
    this.parser = new ResponseParser(
      { onHead: (h) => this.onHead(h), onBody: (chunk) => this.sink?.onBody(chunk) },
      { maxHeaderBytes: this.maxHeaderBytes, headRequest },
    );
    // One write: head and body leave in one segment when they fit.
    // Binary bodies (multipart uploads) go as bytes, never through a string.
    this.socket.write(body === null ? head : typeof body === "string" ? head + body : Buffer.concat([Buffer.from(head, "latin1"), body]));
  }

  /** Returns an unused connection to its pool (its exchange gave up before starting). */
  handBack(): void {
    if (!this.busy && !this.closed) this.owner.release(this);
  }

  /** Closes the connection; a response still coming cannot be reused mid-way. */
  abort(): void {
    this.sink = undefined;
    this.close(undefined);
  }

  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    this.socket.resume();
  }

  private onHead(head: ResponseHead): void {
    const keepAlive = head.headers["keep-alive"];
    const hint = keepAlive === undefined ? null : /timeout=(\d+)/i.exec(keepAlive);
    this.idleHintMs = hint ? Number(hint[1]) * 1000 : undefined;
    this.sink?.onHead(head);
  }

  private onData(data: Buffer): void {
    // A Node socket's callback: uWS delivers nothing now, so the answer this completes is written at once.
    notDelivering();
    const parser = this.parser;
    if (!this.sink || !parser) {
      // Bytes while idle: the upstream is confused, or closing. Never reuse this one.
      this.close(undefined);
      return;
    }
    try {
      parser.feed(data);
    } catch (error) {
      this.close(error instanceof Error ? error : new HttpParseError(String(error)));
      return;
    }
    if (parser.complete) {
      const sink = this.sink;
      this.sink = undefined;
      this.parser = undefined;
      sink?.onComplete();
      if (parser.reusable && !this.closed) this.owner.release(this);
      else this.close(undefined);
    }
  }

  private onEnd(): void {
    // A body delimited by the close ends here; otherwise the close is an error (reported by close()).
    const parser = this.parser;
    if (this.sink && parser?.readsUntilClose) {
      parser.finish();
      const sink = this.sink;
      this.sink = undefined;
      sink.onComplete();
    }
    this.close(undefined);
  }

  private close(error: Error | undefined): void {
    if (this.closed) return;
    this.closed = true;
    this.socket.destroy();
    const sink = this.sink;
    this.sink = undefined;
    if (sink) {
      const message = error ? `connection failed: ${error.message}` : "the connection closed before the response ended";
      sink.onError(error instanceof HttpParseError ? error : new ConnectionClosedError(message, { cause: error }));
    }
    this.owner.remove(this);
  }
}
