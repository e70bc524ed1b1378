// One resource's live events over a WebSocket (a conversation's, a job's):
// the route's `accept` authorises and looks up the resource; the first frame
// is that snapshot, then each event the bus carries for the resource's id, as
// JSON text frames. Events come from the process-wide bus (Redis pub/sub in
// the cluster), so a socket on any replica sees every actor's events.
// Revoking the API key the socket was opened with closes it (4401).
import type { TemplatedApp, WebSocket } from "uWebSockets.js";
import type { EventBus } from "../actors/event-bus.ts";
import type { KeyRevocations } from "../tenancy/key-revocations.ts";
import type { AuthMode, WsRouteDefinition } from "./route.ts";
import { attachWsRoute, type WsRouteDeps } from "./ws-route.ts";

/** What a route's `accept` answers: the socket's data. */
export interface EventStreamSocket<Snapshot> {
  /** The resource whose events the socket carries. */
  id: string;
  snapshot: Snapshot;
  /** The API key the socket was opened with: revoking it closes the socket. */
  keyId: string;
  unwatch?: () => void;
  closed?: boolean;
}

export interface EventStreamDeps<Event> extends WsRouteDeps {
  events: EventBus<Event>;
  /** Revoking the key a socket was opened with closes the socket (code 4401). */
  revocations: KeyRevocations;
}

export interface EventStream<Snapshot, Event> {
  /** The id of the resource an event belongs to: it goes to that resource's sockets. */
  resourceOf(event: Event): string;
  /** The first frame, from what `accept` looked up. */
  firstFrame(id: string, snapshot: Snapshot): unknown;
  /** A resource that can end (a job): once final, after its snapshot or an event, the socket closes (1000) with `reason`. */
  finish?: { reason: string; afterSnapshot(snapshot: Snapshot): boolean; afterEvent(event: Event): boolean };
}

export async function attachEventStream<P extends string, A extends AuthMode, Snapshot, Event>(
  app: TemplatedApp,
  route: WsRouteDefinition<P, A, EventStreamSocket<Snapshot>>,
  stream: EventStream<Snapshot, Event>,
  deps: EventStreamDeps<Event>,
): Promise<void> {
  const { finish } = stream;
  const sockets = new Map<string, Set<WebSocket<EventStreamSocket<Snapshot>>>>();
  await deps.events.subscribe((event, json) => {
    const listeners = sockets.get(stream.resourceOf(event));
    if (!listeners) return;
    // Events arrive from the bus (Redis pub/sub in the cluster), outside any
    // uWS callback: an uncorked send would sit in uWS's buffer until the
    // replica had other traffic.
    for (const ws of listeners) {
      ws.cork(() => ws.send(json, false));
      if (finish?.afterEvent(event)) ws.end(1000, finish.reason);
    }
  }, () => sockets.size > 0);

  attachWsRoute(app, route, {
    idleTimeout: 120,
    sendPingsAutomatically: true,
    maxPayloadLength: 4 * 1024,
    maxBackpressure: 1024 * 1024,
    open: (ws) => {
      const data = ws.getUserData();
      let set = sockets.get(data.id);
      if (!set) sockets.set(data.id, (set = new Set()));
      set.add(ws);
      // Not corked: an end() inside cork() left the close frame unsent until the next I/O.
      data.unwatch = deps.revocations.watch(data.keyId, () => ws.end(4401, "the API key was revoked"));
      // `open` runs inside res.upgrade, inside the upgrade's res.cork. A frame
      // sent from there was, about one run in six, followed by the socket
      // dropping (1006 on both sides). The snapshot goes out right after the
      // cork instead: a microtask still runs before any bus event (those come
      // from I/O callbacks), so it stays the first frame.
      queueMicrotask(() => {
        if (data.closed) return;
        ws.cork(() => ws.send(JSON.stringify(stream.firstFrame(data.id, data.snapshot)), false));
        if (finish?.afterSnapshot(data.snapshot)) ws.end(1000, finish.reason);
      });
    },
    message: () => {
      // The stream is one-way; client frames are ignored.
    },
    close: (ws) => {
      const data = ws.getUserData();
      data.closed = true;
      data.unwatch?.();
      const set = sockets.get(data.id);
      set?.delete(ws);
      if (set && set.size === 0) sockets.delete(data.id);
    },
  }, deps);
}
