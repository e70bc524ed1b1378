// A Troupe event WebSocket as an async iterator of its JSON frames, on the
// global WebSocket (Node 22, browsers). The API key rides as the subprotocols
// `["troupe.v1", "bearer.<key>"]`, which works where headers cannot be set.
// Leaving the loop closes the socket; the server closing with 1000 (a job
// that became final) ends it; any other close throws. The server refuses in
// one of two ways. Once the socket is open (the resource is not found or
// not the caller's, a key it had to look up, a revoked key) it closes with
// 4000 + the HTTP status and the error as JSON in the reason: that error is
// thrown as its class (NotFoundError for 4404, AuthenticationError for
// 4401…). Before (a refusal decided at once) the upgrade gets an HTTP
// answer, which the WebSocket API does not show: the upgrade is then asked
// once more over node:http, whose answer names the reason (401, 403…).
import { randomBytes } from "node:crypto";
import { ConnectionError, createError, errorFromResponse, type TroupeError } from "./errors.ts";

export interface EventSocketOptions {
  signal?: AbortSignal | undefined;
}

export interface SocketDeps {
  WebSocket: typeof globalThis.WebSocket;
}

/**
 * Why a WebSocket that never opened was refused: the upgrade is asked again
 * over node:http, which (unlike the WebSocket API) reads a refusal's status
 * and JSON body. A plain GET would not do: the server answers any plain GET
 * on these paths 426 before it looks at the credential.
 */
async function refusal(httpUrl: string, protocols: string[]): Promise<TroupeError> {
  const unreachable = new ConnectionError({ status: 0, code: "connection_error", message: `the WebSocket ${httpUrl} could not be opened` });
  const { request } = httpUrl.startsWith("https:") ? await import("node:https") : await import("node:http");
  return new Promise((resolve) => {
    const req = request(httpUrl, {
      headers: {
        connection: "Upgrade",
        upgrade: "websocket",
        "sec-websocket-version": "13",
        "sec-websocket-key": randomBytes(16).toString("base64"),
        "sec-websocket-protocol": protocols.join(", "),
      },
      timeout: 10_000,
    });
    req.on("upgrade", (_res, socket) => {
      // Accepted this time: the first failure was the connection's.
      socket.destroy();
      resolve(unreachable);
    });
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // Not JSON: the message quotes the text.
        }
        const headers = new Headers();
        for (const [name, value] of Object.entries(res.headers)) if (typeof value === "string") headers.set(name, value);
        resolve(errorFromResponse(new Response(null, { status: res.statusCode ?? 500, headers }), body));
      });
      res.on("error", () => resolve(unreachable));
    });
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(unreachable));
    req.end();
  });
}

/** The error a 4000 + status close stands for: its reason is the error body's `error` object as JSON (cut to fit a close frame). */
function closeError(code: number, reason: string): TroupeError {
  const status = code - 4000;
  let error: unknown;
  try {
    error = JSON.parse(reason);
  } catch {
    // Not JSON (an older server's plain reason): the message quotes it.
  }
  const field = (name: string): string | undefined => {
    const value = typeof error === "object" && error !== null ? (error as Record<string, unknown>)[name] : undefined;
    return typeof value === "string" ? value : undefined;
  };
  return createError({
    status,
    // Older servers closed only a revoked key's socket this way (4401, plain reason).
    code: field("code") ?? (status === 401 ? "unauthorized" : `http_${status}`),
    message: field("message") ?? (reason || `the server closed the WebSocket with ${code}`),
    requestId: field("request_id"),
  });
}

export async function* eventSocket<T>(httpUrl: string, credential: string, deps: SocketDeps, options: EventSocketOptions = {}): AsyncGenerator<T> {
  const wsUrl = httpUrl.replace(/^http/, "ws");
  const protocols = ["troupe.v1", `bearer.${credential}`];
  const socket = new deps.WebSocket(wsUrl, protocols);
  const frames: T[] = [];
  let opened = false;
  let ended = false;
  let failure: unknown;
  let wake: (() => void) | undefined;
  const notify = (): void => {
    wake?.();
    wake = undefined;
  };
  socket.onopen = () => {
    opened = true;
  };
  socket.onmessage = (event) => {
    try {
      frames.push(JSON.parse(String(event.data)) as T);
    } catch (error) {
      failure ??= error;
      socket.close(1000);
    }
    notify();
  };
  // Node's WebSocket reports a connection that never opened with an error and no close event.
  socket.onerror = () => {
    if (opened) return;
    ended = true;
    notify();
  };
  socket.onclose = (event) => {
    ended = true;
    if (opened && event.code >= 4400 && event.code < 4600) {
      failure ??= closeError(event.code, event.reason);
    } else if (opened && event.code !== 1000 && event.code !== 1005) {
      failure ??= new ConnectionError({ status: 0, code: "connection_error", message: `the WebSocket closed with ${event.code} ${event.reason}`.trim() });
    }
    notify();
  };
  const onAbort = (): void => {
    failure ??= options.signal?.reason;
    socket.close(1000);
    ended = true;
    notify();
  };
  options.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    for (;;) {
      const frame = frames.shift();
      if (frame !== undefined) {
        yield frame;
        continue;
      }
      if (ended) {
        if (!opened && failure === undefined) failure = await refusal(httpUrl, protocols);
        if (failure !== undefined) throw failure;
        return;
      }
      await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    options.signal?.removeEventListener("abort", onAbort);
    if (socket.readyState === socket.CONNECTING || socket.readyState === socket.OPEN) socket.close(1000);
  }
}
