// Live events of one conversation over a WebSocket at
// /v1/agents/conversations/{id}/events (API key with scope `agents`, in the
// Authorization header, or for browsers as the subprotocols
// `["troupe.v1", "bearer.<key>"]`; the server selects `troupe.v1`).
// The first frame is the conversation as it is; then each status change,
// appended message and failed turn as JSON text frames. Events come from the
// process-wide bus, so a socket on any replica sees every actor's events.
import type { TemplatedApp, WebSocket } from "uWebSockets.js";
import { TroupeError } from "../core/errors.ts";
import { callActor, type ActorHost } from "../actors/host.ts";
import type { ConversationActorDefinition } from "../actors/conversation/conversation-actor.ts";
import type { ConversationEvent, ConversationEventBus } from "../actors/conversation/events.ts";
import { defineWsRoute } from "./route.ts";
import type { KeyRevocations } from "../tenancy/key-revocations.ts";
import { attachWsRoute, type WsRouteDeps } from "./ws-route.ts";

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface SocketData {
  conversationId: string;
  snapshot: unknown;
  /** The API key the socket was opened with: revoking it closes the socket. */
  keyId: string;
  unwatch?: () => void;
  closed?: boolean;
}

export interface ConversationEventsDeps extends WsRouteDeps {
  /** The declaration (also handed to the gateway, which documents it). */
  route: ConversationEventsRoute;
  events: ConversationEventBus;
  /** Revoking the key a socket was opened with closes the socket (code 4401). */
  revocations: KeyRevocations;
}

export type ConversationEventsRoute = ReturnType<typeof conversationEventsRoute>;

/** The route: admission (API key, scope `agents`) runs before `accept`; OpenAPI is generated from it. */
export function conversationEventsRoute(deps: { actors: ActorHost; conversation: ConversationActorDefinition }) {
  return defineWsRoute({
    kind: "ws",
    path: "/v1/agents/conversations/:id/events",
    summary: "WebSocket: live events of a conversation (upgrade; first frame is the conversation, then status/message/failure events)",
    tag: "agents",
    auth: "api_key",
    scope: "agents",
    errors: ["not_found"],
    subprotocol: "troupe.v1",
    accept: async (ctx): Promise<SocketData> => {
      const id = ctx.params.id.toLowerCase();
      if (!uuidPattern.test(id)) throw new TroupeError("not_found", "conversation not found");
      const snapshot = await callActor(deps.actors, deps.conversation, id, "get", { organization_id: ctx.auth.key.organization_id });
      return { conversationId: id, snapshot, keyId: ctx.auth.key.id };
    },
  });
}

export async function attachConversationEvents(app: TemplatedApp, deps: ConversationEventsDeps): Promise<void> {
  const sockets = new Map<string, Set<WebSocket<SocketData>>>();
  await deps.events.subscribe((event: ConversationEvent, json: string) => {
    const listeners = sockets.get(event.conversation_id);
    if (!listeners) return;
    // Events arrive from the bus (Redis pub/sub in the cluster), outside any
    // uWS callback: an uncorked send would sit in uWS's buffer until the
    // replica had other traffic.
    for (const ws of listeners) ws.cork(() => ws.send(json, false));
  }, () => sockets.size > 0);

  attachWsRoute(app, deps.route, {
    idleTimeout: 120,
    sendPingsAutomatically: true,
    maxPayloadLength: 4 * 1024,
    maxBackpressure: 1024 * 1024,
    open: (ws) => {
      const data = ws.getUserData();
      let set = sockets.get(data.conversationId);
      if (!set) sockets.set(data.conversationId, (set = new Set()));
      set.add(ws);
      // Not corked: an end() inside cork() left the close frame unsent until the next I/O.
      data.unwatch = deps.revocations.watch(data.keyId, () => ws.end(4401, "the API key was revoked"));
      // `open` runs inside res.upgrade, inside the upgrade's res.cork. A frame
      // sent from there was, about one run in six, followed by the socket
      // dropping (1006 on both sides). The snapshot goes out right after the
      // cork instead: a microtask still runs before any bus event (those come
      // from I/O callbacks), so it stays the first frame.
      queueMicrotask(() => {
        if (!data.closed) ws.cork(() => ws.send(JSON.stringify({ type: "conversation", conversation_id: data.conversationId, conversation: data.snapshot }), false));
      });
    },
    message: () => {
      // The stream is one-way; client frames are ignored.
    },
    close: (ws) => {
      const data = ws.getUserData();
      data.closed = true;
      data.unwatch?.();
      const set = sockets.get(data.conversationId);
      set?.delete(ws);
      if (set && set.size === 0) sockets.delete(data.conversationId);
    },
  }, deps);
}
