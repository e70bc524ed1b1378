// One keep-alive HTTP/1.1 connection driven by hand, for benchmarks that
// measure the gateway rather than the client: each request's bytes are built
// once, and an answer ends when its head and `Content-Length` bytes have
// arrived. A fetch() client builds a Request, a body stream and a Headers
// list per call, and its cost (tens of µs, more for a request with a body)
// lands inside the figure being measured when it shares the process.
import { connect, type Socket } from "node:net";

export interface RawAnswer {
  status: number;
  headers: Map<string, string>;
  body: Buffer;
}

const headEnd = Buffer.from("\r\n\r\n");

export class RawHttpConnection {
  private buffered: Buffer = Buffer.alloc(0);
  private waiting: { resolve: (answer: RawAnswer) => void; reject: (error: Error) => void } | undefined;

  private readonly socket: Socket;
  private readonly host: string;

  private constructor(socket: Socket, host: string) {
    this.socket = socket;
    this.host = host;
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => this.received(chunk));
    socket.on("error", (error) => this.fail(error));
    socket.on("close", () => this.fail(new Error("the connection closed")));
  }

  static async open(origin: string): Promise<RawHttpConnection> {
    const url = new URL(origin);
    const socket = connect({ host: url.hostname, port: Number(url.port) });
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", reject);
    });
    return new RawHttpConnection(socket, url.host);
  }

  /** The bytes of one request, built once and sent as often as wanted. */
  request(method: string, path: string, headers: Record<string, string>, body?: string): Buffer {
    const payload = body === undefined ? undefined : Buffer.from(body);
    const lines = [`${method} ${path} HTTP/1.1`, `host: ${this.host}`];
    for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
    if (payload) lines.push(`content-length: ${payload.length}`);
    const head = Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1");
    return payload ? Buffer.concat([head, payload]) : head;
  }

  /** Sends a request built by request() and resolves with its whole answer. */
  send(bytes: Buffer): Promise<RawAnswer> {
    if (this.waiting) return Promise.reject(new Error("one request at a time on a raw connection"));
    return new Promise<RawAnswer>((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.socket.write(bytes);
    });
  }

  close(): void {
    this.socket.destroy();
  }

  private received(chunk: Buffer): void {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    const end = this.buffered.indexOf(headEnd);
    if (end < 0 || !this.waiting) return;
    const head = this.buffered.subarray(0, end).toString("latin1").split("\r\n");
    const headers = new Map<string, string>();
    for (const line of head.slice(1)) {
      const colon = line.indexOf(":");
      headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
    }
    const length = Number(headers.get("content-length") ?? "NaN");
    if (!Number.isInteger(length)) return this.fail(new Error(`an answer without a Content-Length: ${head[0] ?? ""}`));
    const bodyStart = end + headEnd.length;
    if (this.buffered.length < bodyStart + length) return;
    const body = this.buffered.subarray(bodyStart, bodyStart + length);
    this.buffered = this.buffered.subarray(bodyStart + length);
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting.resolve({ status: Number(head[0]?.split(" ")[1]), headers, body });
  }

  private fail(error: Error): void {
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.reject(error);
  }
}
