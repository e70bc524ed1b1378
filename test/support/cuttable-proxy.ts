// A TCP proxy a test or the chaos run can cut: everything that talks to Redis (the
// replicas' tenancy store, every daprd's state store and pub/sub) goes
// through it, so "Redis is unreachable" is one call — every open connection
// is reset and new ones are refused — while Redis itself keeps its data, as
// when a network partition (not a crash) separates Redis from the cluster.
import { createServer, connect, type Server, type Socket } from "node:net";

export class CuttableProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private cutSince: number | undefined;

  readonly listenPort: number;
  private readonly target: { host: string; port: number };

  private constructor(listenPort: number, target: { host: string; port: number }) {
    this.listenPort = listenPort;
    this.target = target;
  }

  /** Listens on 127.0.0.1:listenPort and forwards to target. */
  static async start(listenPort: number, target: { host: string; port: number }): Promise<CuttableProxy> {
    const proxy = new CuttableProxy(listenPort, target);
    await proxy.listen();
    return proxy;
  }

  get isCut(): boolean {
    return this.cutSince !== undefined;
  }

  /** Resets every proxied connection and stops listening: connects are refused until restore(). */
  async cut(): Promise<void> {
    if (this.isCut) return;
    this.cutSince = Date.now();
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.resetAndDestroy();
    this.sockets.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Listens again on the same port; returns how long the cut lasted (ms). */
  async restore(): Promise<number> {
    if (!this.isCut) return 0;
    const lasted = Date.now() - (this.cutSince ?? Date.now());
    await this.listen();
    this.cutSince = undefined;
    return lasted;
  }

  async stop(): Promise<void> {
    await this.cut();
  }

  private listen(): Promise<void> {
    const server = createServer((client) => this.pipe(client));
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.listenPort, "127.0.0.1", () => resolve());
    });
  }

  private pipe(client: Socket): void {
    const upstream = connect(this.target.port, this.target.host);
    for (const socket of [client, upstream]) {
      socket.setNoDelay(true);
      this.sockets.add(socket);
      socket.once("close", () => this.sockets.delete(socket));
      // One side failing ends both, as a real broken path would.
      socket.once("error", () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
    client.once("close", () => upstream.destroy());
    upstream.once("close", () => client.destroy());
  }
}
