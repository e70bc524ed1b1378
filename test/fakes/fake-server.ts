// A real HTTP server on 127.0.0.1 (random port) for fake upstream providers,
// with scriptable faults: an error status (429 with Retry-After…), hanging
// (a timeout for the caller), cut responses and streams, slow answers, and
// random failure/timeout/cut rates for the chaos test. TCP_NODELAY is set on
// every accepted socket so keep-alive requests never stall on Nagle. Each
// response's outcome is recorded (finished, or its connection closed before
// it ended), so tests can assert that a caller really hung up.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export type Fault =
  | { kind: "ok" }
  | { kind: "status"; status: number; retryAfter?: string; message?: string }
  | { kind: "hang" }
  | { kind: "cut" }
  | { kind: "delay"; ms: number };

export interface FaultSettings {
  /** Consumed first, one per request. */
  queue: Fault[];
  failureRate: number;
  failureStatus: number;
  timeoutRate: number;
  /** Applies to streamed answers (and cuts JSON bodies too). */
  cutRate: number;
  /** Before every answer. */
  delayMs: number;
  /** Between stream events. */
  eventDelayMs: number;
  random: () => number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  body: unknown;
}

export interface FakeContext {
  req: RecordedRequest;
  res: ServerResponse;
  fault: Fault;
  settings: FaultSettings;
}

/** How a response ended: fully written, or its connection closed first (the caller aborted, or a cut fault). */
export type ResponseOutcome = "finished" | "closed early";

export interface FakeServer {
  url: string;
  requests: RecordedRequest[];
  faults: FaultSettings;
  /** Resolves once the response to `req` (one of `requests`) has ended. */
  outcome(req: RecordedRequest): Promise<ResponseOutcome>;
  close(): Promise<void>;
}

export type FakeHandler = (ctx: FakeContext) => Promise<void> | void;

export function defaultFaults(): FaultSettings {
  return { queue: [], failureRate: 0, failureStatus: 500, timeoutRate: 0, cutRate: 0, delayMs: 0, eventDelayMs: 0, random: Math.random };
}

export async function startFake(
  handler: FakeHandler,
  errorBody: (status: number, message: string) => unknown,
): Promise<FakeServer> {
  const requests: RecordedRequest[] = [];
  const outcomes = new WeakMap<RecordedRequest, Promise<ResponseOutcome>>();
  const faults = defaultFaults();
  const sockets = new Set<Socket>();
  const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      let body: unknown = undefined;
      const text = Buffer.concat(chunks).toString("utf8");
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify(errorBody(400, "invalid JSON")));
        return;
      }
      const recorded: RecordedRequest = { method: req.method ?? "GET", path: req.url ?? "/", headers: req.headers, body };
      requests.push(recorded);
      // 'close' fires when the response finished or its connection went away, whichever comes first.
      outcomes.set(recorded, new Promise((resolve) => res.once("close", () => resolve(res.writableFinished ? "finished" : "closed early"))));
      void respond(recorded, res);
    });
  });

  const decide = (): Fault => {
    const queued = faults.queue.shift();
    if (queued) return queued;
    const r = faults.random();
    if (r < faults.failureRate) return { kind: "status", status: faults.failureStatus };
    if (r < faults.failureRate + faults.timeoutRate) return { kind: "hang" };
    if (r < faults.failureRate + faults.timeoutRate + faults.cutRate) return { kind: "cut" };
    return faults.delayMs > 0 ? { kind: "delay", ms: faults.delayMs } : { kind: "ok" };
  };

  const respond = async (req: RecordedRequest, res: ServerResponse): Promise<void> => {
    const fault = decide();
    if (fault.kind === "hang") return; // never answers; the caller's deadline must fire
    if (fault.kind === "delay") await new Promise((r) => setTimeout(r, fault.ms));
    if (fault.kind === "status") {
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (fault.retryAfter !== undefined) headers["retry-after"] = fault.retryAfter;
      res.writeHead(fault.status, headers).end(JSON.stringify(errorBody(fault.status, fault.message ?? `injected ${fault.status}`)));
      return;
    }
    try {
      await handler({ req, res, fault, settings: faults });
    } catch (e) {
      if (!res.headersSent) {
        res.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify(errorBody(500, String(e))));
      } else res.destroy();
    }
  };

  server.on("connection", (s: Socket) => {
    s.setNoDelay(true);
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    faults,
    outcome: (req) => outcomes.get(req) ?? Promise.reject(new Error("not a request this fake received")),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export function sendJson(ctx: FakeContext, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  if (ctx.fault.kind === "cut") {
    // Announce the full length, send half, drop the connection.
    ctx.res.writeHead(status, { "content-type": "application/json", "content-length": String(Buffer.byteLength(text)) });
    ctx.res.write(text.slice(0, Math.floor(text.length / 2)));
    setImmediate(() => ctx.res.destroy());
    return;
  }
  ctx.res.writeHead(status, { "content-type": "application/json" }).end(text);
}

/** Writes SSE frames (each already `event:`/`data:` text without the blank line); a cut fault drops the connection halfway. */
export async function sendSse(ctx: FakeContext, frames: string[]): Promise<void> {
  ctx.res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const cutAt = ctx.fault.kind === "cut" ? Math.max(1, Math.floor(frames.length / 2)) : frames.length;
  for (let i = 0; i < cutAt; i++) {
    if (ctx.settings.eventDelayMs > 0 && i > 0) await new Promise((r) => setTimeout(r, ctx.settings.eventDelayMs));
    if (ctx.res.destroyed) return;
    ctx.res.write(`${frames[i]}\n\n`);
  }
  if (cutAt < frames.length) ctx.res.destroy();
  else ctx.res.end();
}

/** Word count: the fakes' token count. */
export function words(text: string): number {
  return text.split(/\s+/).filter((w) => w.length > 0).length;
}

/** Splits text into word deltas that join back to it. */
export function wordDeltas(text: string): string[] {
  return text.match(/\s*\S+/g) ?? [];
}

/** Splits a string into pieces of n characters (streamed tool argument fragments). */
export function fragments(text: string, n = 4): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += n) out.push(text.slice(i, i + n));
  return out.length > 0 ? out : [""];
}
