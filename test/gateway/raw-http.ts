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
