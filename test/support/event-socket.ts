// Opens a resource's event socket (a job's, a conversation's) and waits for
// its first frame, the snapshot.
//
// uWebSockets.js 20.x can close a socket it has just upgraded after an
// await: the server must upgrade inside res.cork() then, and cork()'s
// epilogue reads the response's state from memory the upgrade has just
// reused, so now and then it closes the new socket without a close frame
// (uNetworking/uWebSockets#1928, fixed upstream by uNetworking/uWebSockets#1929, in no uws-pack
// release yet; docs/api/agents.md, "Live events"). The client sees 1006
// before any frame. Only in that case this reconnects, once, and says so in
// the test's output; every other outcome is the test's to judge.
import type { Test } from "tap";
import { waitFor } from "./net.ts";

export interface EventSocket<Frame> {
  ws: WebSocket;
  /** Every frame received, parsed, in order. */
  frames: Frame[];
  /** Resolves with the close code. */
  closed: Promise<number>;
  /** Resolves with the close code, its reason, and when it came (Date.now()). */
  closing: Promise<{ code: number; reason: string; at: number }>;
}

function open<Frame>(url: string, protocols: string[]): Promise<EventSocket<Frame>> {
  const ws = new WebSocket(url, protocols);
  const frames: Frame[] = [];
  ws.onmessage = (e) => frames.push(JSON.parse(String(e.data)) as Frame);
  const closing = new Promise<{ code: number; reason: string; at: number }>((resolve) =>
    ws.addEventListener("close", (e) => resolve({ code: e.code, reason: e.reason, at: Date.now() })),
  );
  const closed = closing.then((c) => c.code);
  return new Promise((resolve, reject) => {
    ws.onopen = () => resolve({ ws, frames, closed, closing });
    ws.onerror = () => reject(new Error(`websocket to ${url} failed`));
  });
}

/** The open socket once its first frame arrived; reconnects once if uWS dropped it (1006) before any frame. */
export async function openEventSocket<Frame>(t: Test, url: string, protocols: string[], timeoutMs = 5000): Promise<EventSocket<Frame>> {
  for (let attempt = 1; ; attempt++) {
    const socket = await open<Frame>(url, protocols);
    let code: number | undefined;
    void socket.closed.then((c) => (code = c));
    await waitFor(async () => socket.frames.length > 0 || code !== undefined, timeoutMs, "the first frame");
    if (socket.frames.length > 0 || code !== 1006 || attempt === 2) return socket;
    t.comment(`the socket closed 1006 before its first frame (uNetworking/uWebSockets#1928): reconnecting once`);
  }
}
