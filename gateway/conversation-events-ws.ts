// Live events of one conversation over a WebSocket at
// /v1/agents/conversations/{id}/events (API key with scope `agents`, in the
// Authorization header, or for browsers as the subprotocols
// `["troupe.v1", "bearer.<key>"]`; the server selects `troupe.v1`).
// The first frame is the conversation as it is; then each status change,
// appended message and failed turn as JSON text frames. Served by the shared
// event stream (gateway/event-stream-ws.ts), which reads the conversation
// once subscribed to its events: an appended message the first frame already
// holds (by id) is not sent again.
import type { TemplatedApp } from "uWebSockets.js";
import { TroupeError } from "../core/errors.ts";
import { callActor, type ActorHost } from "../actors/host.ts";
import type { ConversationActorDefinition } from "../actors/conversation/conversation-actor.ts";
import type { ConversationEvent } from "../actors/conversation/events.ts";
import type { Conversation } from "../actors/conversation/types.ts";
import { attachEventStream, type EventStreamDeps, type EventStreamTarget } from "./event-stream-ws.ts";
import { defineWsRoute } from "./route.ts";

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface ConversationEventsDeps extends EventStreamDeps<ConversationEvent> {
  /** The declaration (also handed to the gateway, which documents it). */
  route: ConversationEventsRoute;
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
    accept: async (ctx): Promise<EventStreamTarget<Conversation>> => {
      const id = ctx.params.id.toLowerCase();
      if (!uuidPattern.test(id)) throw new TroupeError("not_found", "conversation not found");
      const owner = { organization_id: ctx.auth.key.organization_id, environment_id: ctx.auth.key.environment_id };
      // Another organization's or environment's conversation is not_found here, after the subscription (dropped then).
      return { id, keyId: ctx.auth.key.id, read: () => callActor(deps.actors, deps.conversation, id, "get", owner) };
    },
  });
}

export function attachConversationEvents(app: TemplatedApp, deps: ConversationEventsDeps): void {
  attachEventStream(app, deps.route, {
    firstFrame: (id, conversation) => ({ type: "conversation", conversation_id: id, conversation }),
    alreadyShown: (conversation) => {
      const held = new Set(conversation.messages.map((m) => m.id));
      return (event: ConversationEvent) => event.type === "message.appended" && held.has(event.message.id);
    },
  }, deps);
}
