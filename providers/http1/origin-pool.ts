// The connections of the HTTP/1.1 client (client.ts) to one origin: idle
// keep-alive connections reused most-recent first and closed by one sweep
// timer after the keep-alive delay (or the upstream's shorter Keep-Alive
// hint), at most maxConnectionsPerOrigin open, waiters served in order.
// Every socket has TCP_NODELAY: a keep-alive request must never wait on Nagle.
import { connect as connectTcp, isIP, type Socket } from "node:net";
import { connect as connectTls, type ConnectionOptions } from "node:tls";
import { Connection, type ConnectionOwner } from "./connection.ts";
import type { Exchange } from "./exchange.ts";

/** Where a request URL goes: its origin (the pool key) and what the request line and host header say. */
export interface Target {
  key: string;
  secure: boolean;
  host: string;
  port: number;
  hostHeader: string;
  path: string;
}

/** The client's settings a pool reads. */
export interface PoolOptions {
  maxConnectionsPerOrigin: number;
  keepAliveMs: number;
  maxHeaderBytes: number;
  /** Extra TLS settings (tests trust their own CA with `ca`). */
  tls?: Pick<ConnectionOptions, "ca" | "rejectUnauthorized"> | undefined;
}

const sweepEveryMs = 500;

/** The connections to one origin: idle ones reused most-recent first, waiters served in order. */
export class OriginPool implements ConnectionOwner {
  private readonly target: Target;
  private readonly opts: PoolOptions;
  private readonly idle: Connection[] = [];
  private readonly all = new Set<Connection>();
  private readonly waiters: { exchange: Exchange; use: (conn: Connection) => void }[] = [];
  private sweeper: NodeJS.Timeout | undefined;

  constructor(target: Target, opts: PoolOptions) {
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
