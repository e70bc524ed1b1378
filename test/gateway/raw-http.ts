// Raw HTTP/1.1 over a socket, for tests that send what no client library
// would (conflicting headers, bad versions, huge heads) or must see exactly
// what the server wrote and whether it closed the connection.
import { connect } from "node:net";

/** Sends raw bytes; resolves with everything received until the server closes or `waitMs` passes. */
export function raw(port: number, data: string | Buffer, waitMs = 1_000): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    let text = "";
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text, closed: false });
    }, waitMs);
    socket.on("data", (d: Buffer) => (text += d.toString("latin1")));
    socket.on("error", () => undefined);
    socket.on("close", () => {
      clearTimeout(timer);
      resolve({ text, closed: true });
    });
    socket.write(data);
  });
}

/** Splits a raw HTTP/1.1 response: status, lower-cased headers, body. */
export function parseResponse(text: string): { status: number; headers: Record<string, string>; body: string } {
  const split = text.indexOf("\r\n\r\n");
  const head = text.slice(0, split).split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of head.slice(1)) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(head[0]?.split(" ")[1]), headers, body: text.slice(split + 4) };
}

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * One keep-alive connection read the way an HTTP client reads it: each
 * answer is its head plus Content-Length bytes of body, none after a HEAD.
 * Bytes a HEAD answer should not have carried are read as the start of the
 * next answer, which is how a real client ends up misparsing it.
 */
export async function keepAlive(port: number): Promise<{ send(request: string): Promise<RawAnswer>; rest(waitMs: number): Promise<string>; readonly closed: boolean; close(): void }> {
  const socket = connect(port, "127.0.0.1");
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  let buffered = "";
  let closed = false;
  let wake: (() => void) | undefined;
  socket.on("data", (d: Buffer) => {
    buffered += d.toString("latin1");
    wake?.();
  });
  socket.on("error", () => undefined);
  socket.on("close", () => {
    closed = true;
    wake?.();
  });
  const next = (head: boolean): RawAnswer | undefined => {
    const split = buffered.indexOf("\r\n\r\n");
    if (split < 0) return undefined;
    const parsed = parseResponse(buffered.slice(0, split + 4));
    const length = head ? 0 : Number(parsed.headers["content-length"] ?? 0);
    if (buffered.length < split + 4 + length) return undefined;
    const body = buffered.slice(split + 4, split + 4 + length);
    buffered = buffered.slice(split + 4 + length);
    return { status: parsed.status, headers: parsed.headers, body };
  };
  return {
    get closed() {
      return closed;
    },
    send(request) {
      const head = request.startsWith("HEAD ");
      socket.write(request);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no whole answer to ${request.split("\r\n")[0]} within 2 s; received ${JSON.stringify(buffered)}`)), 2_000);
        const check = (): void => {
          const answer = next(head);
          if (answer) {
            clearTimeout(timer);
            wake = undefined;
            resolve(answer);
          } else if (closed) {
            clearTimeout(timer);
            reject(new Error(`closed before a whole answer to ${request.split("\r\n")[0]}; received ${JSON.stringify(buffered)}`));
          }
        };
        wake = check;
        check();
      });
    },
    /** What arrived beyond the answers read, after waiting `waitMs`. */
    async rest(waitMs) {
      await new Promise((r) => setTimeout(r, waitMs));
      const left = buffered;
      buffered = "";
      return left;
    },
    close: () => socket.destroy(),
  };
}
