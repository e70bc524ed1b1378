// The upstream HTTP/1.1 client the provider adapters use: a keep-alive pool
// per origin (http or https), TCP_NODELAY on every socket (a keep-alive
// request must never wait on Nagle's algorithm), the caller's AbortSignal on
// every request, a bounded number of connections per origin with waiters
// queued in order, and idle connections closed after the keep-alive delay
// (or sooner when the upstream's Keep-Alive header says so) by one sweep
// timer per pool rather than a socket timer re-armed on every request.
//
// Why not undici, which Troupe uses elsewhere: on the chat path it was the
// largest cost Troupe adds. Side by side in one bench run, a uWS pass-through
// over a raw keep-alive socket added 0.145 ms p50 at 1,000 req/s and served
// 28,500 req/s at saturation, against 0.234 ms and 16,700 req/s over undici
// (which yields to the event loop before every reuse of an idle socket and
// parses through a WebAssembly llhttp). Only what provider APIs need is
// here: request bodies are strings, responses are bounded in size, no
// pipelining, no upgrades, no compression (none is asked for).
import { connect as connectTcp, isIP, type Socket } from "node:net";
import { connect as connectTls, type ConnectionOptions } from "node:tls";
import { Connection, type ConnectionOwner, type ExchangeSink } from "./connection.ts";
import type { ResponseHead } from "./response-parser.ts";

export interface Http1ClientOptions {
  /** Concurrent connections per origin; further requests wait for one. */
  maxConnectionsPerOrigin?: number;
  /** Idle keep-alive connections close after this. */
  keepAliveMs?: number;
  maxHeaderBytes?: number;
  /** Buffered (non-streaming) responses larger than this fail. */
  maxBodyBytes?: number;
  /** Extra TLS settings (tests trust their own CA with `ca`). */
  tls?: Pick<ConnectionOptions, "ca" | "rejectUnauthorized">;
}

export interface UpstreamRequest {
  method: "GET" | "POST" | "HEAD" | "DELETE" | "PUT" | "PATCH";
  url: string;
  headers: Record<string, string>;
  /** A string is sent as UTF-8; a Buffer as is (multipart uploads). */
  body: string | Buffer | null;
  signal: AbortSignal;
}

export interface BufferedResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export interface StreamingResponse {
  status: number;
  headers: Record<string, string>;
  /** The body as it arrives; breaking out of the loop closes the connection. */
  body: AsyncIterable<Buffer>;
}

export class ResponseTooLargeError extends Error {
  constructor(maxBytes: number) {
    super(`the response body exceeds ${maxBytes} bytes`);
    this.name = "ResponseTooLargeError";
  }
}

interface Target {
  key: string;
  secure: boolean;
  host: string;
  port: number;
  hostHeader: string;
  path: string;
}

/** RFC 9110 field-name token, and a field value without line breaks: nothing can smuggle a header in. */
const fieldName = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const fieldValue = /^[^\r\n\0]*$/;
const sweepEveryMs = 500;

export class Http1Client {
  private readonly pools = new Map<string, OriginPool>();
  private readonly targets = new Map<string, Target>();
  private readonly opts: Required<Omit<Http1ClientOptions, "tls">> & Pick<Http1ClientOptions, "tls">;

  constructor(opts: Http1ClientOptions = {}) {
    this.opts = {
      maxConnectionsPerOrigin: opts.maxConnectionsPerOrigin ?? 256,
      keepAliveMs: opts.keepAliveMs ?? 30_000,
      maxHeaderBytes: opts.maxHeaderBytes ?? 64 * 1024,
      maxBodyBytes: opts.maxBodyBytes ?? 256 * 1024 * 1024,
      tls: opts.tls,
    };
  }

  /** Resolves with the whole response (any status). */
  requestBuffered(req: UpstreamRequest): Promise<BufferedResponse> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      let head: ResponseHead | undefined;
      const exchange = new Exchange(req.signal, reject, {
        onHead: (h) => (head = h),
        onBody: (chunk) => {
          bytes += chunk.length;
          if (bytes > this.opts.maxBodyBytes) exchange.fail(new ResponseTooLargeError(this.opts.maxBodyBytes));
          else chunks.push(chunk);
        },
        onComplete: () => {
          exchange.settle();
          resolve({ status: head!.status, headers: head!.headers, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, bytes) });
        },
      });
      this.dispatch(req, exchange);
    });
  }

  /** Resolves at the response head; the body streams with backpressure. */
  request(req: UpstreamRequest): Promise<StreamingResponse> {
    return new Promise((resolve, reject) => {
      const body = new BodyStream(req.signal);
      const exchange: Exchange = new Exchange(req.signal, (error) => {
        reject(error);
        body.fail(error);
      }, {
        onHead: (h) => resolve({ status: h.status, headers: h.headers, body }),
        onBody: (chunk) => body.push(chunk),
        onComplete: () => {
          exchange.settle();
          body.end();
        },
      });
      body.bind(exchange);
      this.dispatch(req, exchange);
    });
  }

  /** Closes every connection; requests in flight fail. */
  close(): void {
    for (const pool of this.pools.values()) pool.close();
    this.pools.clear();
  }

  private dispatch(req: UpstreamRequest, exchange: Exchange): void {
    if (req.signal.aborted) {
      exchange.fail(abortReason(req.signal));
      return;
    }
    let target: Target;
    try {
      target = this.target(req.url);
    } catch (error) {
      exchange.fail(error instanceof Error ? error : new Error(String(error)));
      return;
    }
    let head = `${req.method} ${target.path} HTTP/1.1\r\nhost: ${target.hostHeader}\r\n`;
    for (const name in req.headers) {
      const value = req.headers[name]!;
      if (!fieldName.test(name) || !fieldValue.test(value)) {
        exchange.fail(new Error(`header ${JSON.stringify(name)} is not a valid field name and value (no line breaks)`));
        return;
      }
      head += `${name}: ${value}\r\n`;
    }
    if (req.body !== null) head += `content-length: ${Buffer.byteLength(req.body)}\r\n`;
    head += "\r\n";
    let pool = this.pools.get(target.key);
    if (!pool) {
      pool = new OriginPool(target, this.opts);
      this.pools.set(target.key, pool);
    }
    pool.acquire(exchange, (conn) => exchange.run(conn, head, req.body, req.method === "HEAD"));
  }

  private target(url: string): Target {
    const cached = this.targets.get(url);
    if (cached) return cached;
    const u = new URL(url);
    if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error(`unsupported protocol ${u.protocol}`);
    const secure = u.protocol === "https:";
    const host = u.hostname.startsWith("[") ? u.hostname.slice(1, -1) : u.hostname;
    const port = u.port ? Number(u.port) : secure ? 443 : 80;
    const target = { key: `${u.protocol}//${u.host}`, secure, host, port, hostHeader: u.host, path: `${u.pathname}${u.search}` };
    // URLs repeat (one per provider endpoint and model); the bound only guards against a caller that varies them.
    if (this.targets.size >= 1024) this.targets.clear();
    this.targets.set(url, target);
    return target;
  }
}

/** One request's life: waiting for a connection, then on one, then settled. */
class Exchange implements ExchangeSink {
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
class BodyStream implements AsyncIterable<Buffer> {
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

/** The connections to one origin: idle ones reused most-recent first, waiters served in order. */
class OriginPool implements ConnectionOwner {
  private readonly target: Target;
  private readonly opts: Required<Omit<Http1ClientOptions, "tls">> & Pick<Http1ClientOptions, "tls">;
  private readonly idle: Connection[] = [];
  private readonly all = new Set<Connection>();
  private readonly waiters: { exchange: Exchange; use: (conn: Connection) => void }[] = [];
  private sweeper: NodeJS.Timeout | undefined;

  constructor(target: Target, opts: Required<Omit<Http1ClientOptions, "tls">> & Pick<Http1ClientOptions, "tls">) {
    this.target = target;
    this.opts = opts;
  }

  acquire(exchange: Exchange, use: (conn: Connection) => void): void {
    const conn = this.idle.pop();
    if (conn) {
      use(conn);
      return;
    }
    if (this.all.size < this.opts.maxConnectionsPerOrigin) {
      use(this.open());
      return;
    }
    const waiter = { exchange, use };
    this.waiters.push(waiter);
    exchange.cancelWait = () => {
      const i = this.waiters.indexOf(waiter);
      if (i !== -1) this.waiters.splice(i, 1);
    };
  }

  release(conn: Connection): void {
    const waiter = this.nextWaiter();
    if (waiter) {
      waiter.use(conn);
      return;
    }
    // Keep clear of the upstream's own idle timeout by more than a sweep period, so a request never races its close.
    const idleMs = Math.min(this.opts.keepAliveMs, conn.idleHintMs !== undefined ? conn.idleHintMs - 2 * sweepEveryMs : Infinity);
    if (idleMs <= 0) {
      conn.abort();
      return;
    }
    conn.idleUntilMs = performance.now() + idleMs;
    this.idle.push(conn);
    if (!this.sweeper) {
      this.sweeper = setInterval(() => this.sweep(), sweepEveryMs);
      this.sweeper.unref();
    }
  }

  /** Closes idle connections past their time; stops itself when none are idle. */
  private sweep(): void {
    const now = performance.now();
    for (const conn of [...this.idle]) if (conn.idleUntilMs <= now) conn.abort();
    if (this.idle.length === 0 && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }

  remove(conn: Connection): void {
    this.all.delete(conn);
    const i = this.idle.indexOf(conn);
    if (i !== -1) this.idle.splice(i, 1);
    // A slot opened: a waiter gets a fresh connection.
    const waiter = this.nextWaiter();
    if (waiter) waiter.use(this.open());
  }

  close(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
    for (const waiter of this.waiters.splice(0)) waiter.exchange.fail(new Error("the client was closed"));
    for (const conn of [...this.all]) conn.abort();
  }

  private nextWaiter(): { exchange: Exchange; use: (conn: Connection) => void } | undefined {
    for (;;) {
      const waiter = this.waiters.shift();
      if (!waiter) return undefined;
      if (waiter.exchange.done) continue;
      waiter.exchange.cancelWait = undefined;
      return waiter;
    }
  }

  private open(): Connection {
    const { secure, host, port } = this.target;
    let socket: Socket;
    if (secure) {
      socket = connectTls({ host, port, servername: isIP(host) ? undefined : host, ALPNProtocols: ["http/1.1"], ...this.opts.tls });
    } else {
      socket = connectTcp({ host, port });
    }
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 30_000);
    const conn = new Connection(socket, this, this.opts.maxHeaderBytes);
    this.all.add(conn);
    return conn;
  }
}

function abortReason(signal: AbortSignal, fallback = "the request was aborted"): Error {
  return signal.aborted && signal.reason instanceof Error ? signal.reason : new Error(fallback);
}
