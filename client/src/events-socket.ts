// A Troupe event WebSocket as an async iterator of its JSON frames, on the
// global WebSocket (Node 22, browsers). The API key rides as the subprotocols
// `["troupe.v1", "bearer.<key>"]`, which works where headers cannot be set.
// Leaving the loop closes the socket; the server closing with 1000 (a job
// that became final) ends it; any other close throws. A refused upgrade has
// no readable status in the WebSocket API, so the same URL is then asked
// once over plain HTTP, whose answer names the reason (401, 403, 404…).
import { AuthenticationError, ConnectionError, errorFromResponse, type TroupeError } from "./errors.ts";
import type { Fetch } from "./retry.ts";

export interface EventSocketOptions {
  signal?: AbortSignal | undefined;
}

export interface SocketDeps {
  WebSocket: typeof globalThis.WebSocket;
  fetch: Fetch;
}

/** Why a WebSocket that never opened was refused, from a plain GET of its URL. */
async function refusal(httpUrl: string, credential: string, fetch: Fetch): Promise<TroupeError> {
  try {
    const response = await fetch(new Request(httpUrl, { headers: { authorization: `Bearer ${credential}` } }));
    const text = await response.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // Not JSON: the message quotes the text.
    }
    // 426 means the credential and path were fine: the upgrade itself failed.
    if (response.status !== 426 && !response.ok) return errorFromResponse(response, body);
  } catch {
    // Unreachable: said below.
  }
  return new ConnectionError({ status: 0, code: "connection_error", message: `the WebSocket ${httpUrl} could not be opened` });
}

export async function* eventSocket<T>(httpUrl: string, credential: string, deps: SocketDeps, options: EventSocketOptions = {}): AsyncGenerator<T> {
  const wsUrl = httpUrl.replace(/^http/, "ws");
  const socket = new deps.WebSocket(wsUrl, ["troupe.v1", `bearer.${credential}`]);
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
  socket.onclose = (event) => {
    ended = true;
    if (opened && event.code === 4401) {
      failure ??= new AuthenticationError({ status: 401, code: "unauthorized", message: event.reason || "the API key was revoked" });
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
        if (!opened && failure === undefined) failure = await refusal(httpUrl, credential, deps.fetch);
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
