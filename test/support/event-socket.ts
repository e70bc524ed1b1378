// Opens a resource's event socket (a job's, a conversation's) and waits for
// its first frame, the snapshot, or for it to close first. One attempt: a
// socket that closes before its first frame (a 4404 for a resource that is
// not the caller's, or a 1006 drop) comes back closed, for the test to
// judge.
import { waitFor } from "./net.ts";

export interface EventSocket<Frame> {
  ws: WebSocket;
  /** Every frame received, parsed, in order. */
  frames: Frame[];
  /** Resolves with the close code. */
  closed: Promise<number>;
  /** Resolves with the close code, its reason, and when it came (Date.now()). */
  closing: Promise<{ code: number; reason: string; at: number }>;
  /** The close code once it came (undefined while open). */
  readonly code: number | undefined;
}

function open<Frame>(url: string, protocols: string[]): Promise<EventSocket<Frame>> {
  const ws = new WebSocket(url, protocols);
  const frames: Frame[] = [];
  ws.onmessage = (e) => frames.push(JSON.parse(String(e.data)) as Frame);
  let code: number | undefined;
  const closing = new Promise<{ code: number; reason: string; at: number }>((resolve) =>
    ws.addEventListener("close", (e) => {
      code = e.code;
      resolve({ code: e.code, reason: e.reason, at: Date.now() });
    }),
  );
  const closed = closing.then((c) => c.code);
  return new Promise((resolve, reject) => {
    ws.onopen = () =>
      resolve({
        ws,
        frames,
        closed,
        closing,
        get code() {
          return code;
        },
      });
    ws.onerror = () => reject(new Error(`websocket to ${url} failed`));
  });
}

/** The open socket once its first frame arrived, or once it closed without one. */
export async function openEventSocket<Frame>(url: string, protocols: string[], timeoutMs = 5000): Promise<EventSocket<Frame>> {
  const socket = await open<Frame>(url, protocols);
  await waitFor(async () => socket.frames.length > 0 || socket.code !== undefined, timeoutMs, "the first frame");
  return socket;
}

/** What `openOneAfterAnother` saw: how many sockets got their first frame, and the close codes of those that did not. */
export interface OpensTally {
  opened: number;
  firstFrames: number;
  /** Close code (or "no first frame" / "never opened") → how many sockets ended that way before their first frame. */
  drops: Record<string, number>;
}

/**
 * Opens `count` sockets to `url` one after another, each waiting for its
 * first frame (or its close) before it is closed and the next one opens.
 */
export async function openOneAfterAnother(url: string, protocols: string[], count: number, before?: () => Promise<void>): Promise<OpensTally> {
  const tally: OpensTally = { opened: 0, firstFrames: 0, drops: {} };
  const drop = (why: string): void => void (tally.drops[why] = (tally.drops[why] ?? 0) + 1);
  for (let i = 0; i < count; i++) {
    await before?.();
    let socket: EventSocket<unknown>;
    try {
      socket = await open<unknown>(url, protocols);
    } catch {
      drop("never opened");
      continue;
    }
    tally.opened += 1;
    const ws = socket.ws;
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      socket.frames.length > 0 ? "frame" : new Promise<string>((resolve) => ws.addEventListener("message", () => resolve("frame"), { once: true })),
      socket.closed.then((code) => (socket.frames.length > 0 ? "frame" : String(code))),
      new Promise<string>((resolve) => (timer = setTimeout(() => resolve("no first frame"), 5000))),
    ]);
    clearTimeout(timer);
    if (outcome === "frame") tally.firstFrames += 1;
    else drop(outcome);
    socket.ws.close(1000);
    await socket.closed;
  }
  return tally;
}
