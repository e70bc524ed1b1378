// One resource's live events over a WebSocket (a conversation's, a job's):
// the route's `accept` authorises and names the resource; the stream then
// subscribes to that resource's channel on the bus (Redis pub/sub in the
// cluster, so a socket on any replica sees every actor's events) and only
// then reads the resource. All of it runs once the socket is open
// (ws-route.ts: the upgrade never waits), and a resource that is not found,
// or not the caller's, closes the socket with 4404. The first frame is that
// snapshot, then each event heard since the subscription, as JSON text
// frames: an event committed while the socket opened is never lost. One
// that the snapshot already shows may repeat it; a stream's `alreadyShown`
// drops those it can tell. Revoking the API key the socket was opened with
// closes it (4401).
import type { TemplatedApp } from "uWebSockets.js";
import type { ResourceEventBus } from "../actors/event-bus.ts";
import { TroupeError } from "../core/errors.ts";
import type { KeyRevocations } from "../tenancy/key-revocations.ts";
import type { AuthMode, WsRouteDefinition } from "./route.ts";
import { wsCloseFor } from "./ws-close.ts";
import { attachWsRoute, type RouteSocket, type WsRouteDeps } from "./ws-route.ts";

/** What a route's `accept` answers: the resource, authorised, and how to read it. */
export interface EventStreamTarget<Snapshot> {
  id: string;
  /** The API key the socket is opened with: revoking it closes the socket. */
  keyId: string;
  /** The resource as it is; read once its events are subscribed to. */
  read(): Promise<Snapshot>;
}

/** A socket's state, from its subscription until it closes. */
interface StreamSocket<Snapshot, Event> {
  id: string;
  keyId: string;
  /** The upgrade's X-Request-Id, quoted in the close reason when the key is revoked. */
  requestId: string;
  snapshot: Snapshot;
  shown: ((event: Event) => boolean) | undefined;
  /** Events heard before the first frame went out; sent right after it, then undefined. */
  early: Array<{ event: Event; json: string }> | undefined;
  ws: RouteSocket<StreamSocket<Snapshot, Event>> | undefined;
  stopListening: () => Promise<void>;
  unwatch?: () => void;
  closed: boolean;
}

export interface EventStreamDeps<Event> extends WsRouteDeps {
  events: ResourceEventBus<Event>;
  /** Revoking the key a socket was opened with closes the socket (code 4401). */
  revocations: KeyRevocations;
}

export interface EventStream<Snapshot, Event> {
  /** The first frame, from the snapshot. */
  firstFrame(id: string, snapshot: Snapshot): unknown;
  /** Given the first frame's snapshot: true for an event it already shows, which is then not sent. */
  alreadyShown?(snapshot: Snapshot): (event: Event) => boolean;
  /** A resource that can end (a job): once final, after its snapshot or an event, the socket closes (1000) with `reason`. */
  finish?: { reason: string; afterSnapshot(snapshot: Snapshot): boolean; afterEvent(event: Event): boolean };
}

export function attachEventStream<P extends string, A extends AuthMode, Snapshot, Event>(
  app: TemplatedApp,
  route: WsRouteDefinition<P, A, EventStreamTarget<Snapshot>>,
  stream: EventStream<Snapshot, Event>,
  deps: EventStreamDeps<Event>,
): void {
  const { finish } = stream;
  type Socket = StreamSocket<Snapshot, Event>;
  type Ws = RouteSocket<Socket>;

  const send = (socket: Socket, ws: Ws, event: Event, json: string): void => {
    if (socket.closed || socket.shown?.(event)) return;
    ws.cork(() => ws.send(json, false));
    if (finish?.afterEvent(event)) ws.end(1000, finish.reason);
  };

  const subscribed: WsRouteDefinition<P, A, Socket> = {
    ...route,
    accept: async (ctx) => {
      const target = await route.accept(ctx);
      let socket: Socket | undefined;
      const heard: Socket["early"] = [];
      const stopListening = await deps.events.listen(target.id, (event, json) => {
        // Events come from the bus (Redis pub/sub in the cluster), outside any
        // uWS callback: an uncorked send would sit in uWS's buffer until the
        // replica had other traffic.
        if (socket?.ws && !socket.early) send(socket, socket.ws, event, json);
        else heard.push({ event, json });
      });
      // A socket closed before it was ready (refused, or the client gone) must not keep the subscription.
      const abandon = (): void => void stopListening().catch(() => undefined);
      let snapshot: Snapshot;
      try {
        snapshot = await target.read();
      } catch (error) {
        abandon();
        throw error;
      }
      socket = { id: target.id, keyId: target.keyId, requestId: ctx.requestId, snapshot, shown: stream.alreadyShown?.(snapshot), early: heard, ws: undefined, stopListening, closed: false };
      const opening = socket;
      // Gone while it was read: ws-route.ts never calls `ready`, nothing else will unsubscribe.
      if (ctx.signal.aborted) abandon();
      else ctx.signal.addEventListener("abort", () => !opening.ws && abandon(), { once: true });
      return socket;
    },
  };

  attachWsRoute(app, subscribed, {
    idleTimeout: 120,
    sendPingsAutomatically: true,
    maxPayloadLength: 4 * 1024,
    maxBackpressure: 1024 * 1024,
    // After the subscription and the read, outside any uWS callback: the
    // snapshot goes out first, then the events heard meanwhile, in order
    // (bus events come from I/O callbacks, never inside this one).
    ready: (ws, socket) => {
      socket.ws = ws;
      socket.unwatch = deps.revocations.watch(socket.keyId, () => {
        const revoked = wsCloseFor(new TroupeError("unauthorized", "the API key was revoked"), socket.requestId);
        // Not corked: an end() inside cork() left the close frame unsent until the next I/O.
        ws.end(revoked.code, revoked.reason);
      });
      const early = socket.early ?? [];
      socket.early = undefined;
      ws.cork(() => ws.send(JSON.stringify(stream.firstFrame(socket.id, socket.snapshot)), false));
      if (finish?.afterSnapshot(socket.snapshot)) {
        ws.end(1000, finish.reason);
        return;
      }
      for (const { event, json } of early) send(socket, ws, event, json);
    },
    // The stream is one-way: client frames are ignored (no `message`).
    close: (socket) => {
      socket.closed = true;
      socket.unwatch?.();
      void socket.stopListening().catch((error: unknown) => deps.log.warn("event stream: unsubscribing failed", { id: socket.id, error }));
    },
  }, deps);
}
