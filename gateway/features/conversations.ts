// Agent conversations: a ConversationActor per conversation (its messages,
// its model loop, its tools), the directory that lists them, their event bus,
// the /v1/agents routes and the live-events WebSocket.
import { eraseDefinition } from "../../actors/actor.ts";
import { createConversationActor, type ConversationActorDefinition } from "../../actors/conversation/conversation-actor.ts";
import { ConversationDirectory } from "../../actors/conversation/directory.ts";
import { storeConversationEventBus } from "../../actors/conversation/events.ts";
import { attachConversationEvents, conversationEventsRoute } from "../conversation-events-ws.ts";
import { agentRoutes } from "../routes/agents.ts";
import { storedKeyModelFilter } from "../../tenancy/key-model-filter.ts";
import type { BillingFeature } from "./billing.ts";
import type { Feature } from "./feature.ts";
import type { SharedServices } from "./shared-services.ts";
import type { VectorsFeature } from "./vectors.ts";

export interface ConversationsFeature extends Feature {
  conversation: ConversationActorDefinition;
  directory: ConversationDirectory;
}

export function conversationsFeature(s: SharedServices, billing: BillingFeature, vectors: VectorsFeature): ConversationsFeature {
  const { actors, router, log, config } = s;
  const directory = new ConversationDirectory(s.store, (error) => log.warn("conversation summary write failed", { error }));
  const events = storeConversationEventBus(s.store, (error) => log.warn("conversation event failed", { error }));
  const conversation = createConversationActor({
    // The key that runs the turn decides which models it may reach (read at each call, so a PATCH applies to the next one).
    chat: async (request, signal, payer) => router.chat(request, { signal, allowModel: (payer ? await storedKeyModelFilter(s.store, payer.api_key_id) : undefined) ?? null }),
    recordUsage: (payer, requestId, category, figures, call) => billing.meter.recordGrouped({ ...payer, request_id: requestId, call }, category, figures),
    memory: vectors.orgIndex,
    directory,
    events,
    conversationMaxBytes: config.agents.conversationMaxBytes,
    toolResultMaxBytes: config.agents.messageMaxBytes,
  });
  const eventsRoute = conversationEventsRoute({ actors, conversation });
  return {
    conversation,
    directory,
    actors: [eraseDefinition(conversation)],
    routes: agentRoutes({ actors, conversation, directory, router, billing: billing.billing, limits: config.agents }),
    sockets: [{ route: eventsRoute, attach: (app, deps) => attachConversationEvents(app, { ...deps, route: eventsRoute, events }) }],
    stop: () => directory.flush(),
  };
}
