// The Conversations API as a feature: its three actor types, its routes and
// the hook the Responses API uses, built from the shared services.
import { eraseDefinition } from "../../../../actors/actor.ts";
import { createConversationItemsActor } from "../../../../actors/conversation-items/conversation-items-actor.ts";
import { createConversationItemPageActor } from "../../../../actors/conversation-items/item-page-actor.ts";
import { createConversationItemRefActor } from "../../../../actors/conversation-items/item-ref-actor.ts";
import type { Feature } from "../../../features/feature.ts";
import type { SharedServices } from "../../../features/shared-services.ts";
import type { ResponseConversationHook } from "../responses/create.ts";
import { conversationHook, responsesConversationHook, type ConversationHook } from "./hook.ts";
import { openAiConversationRoutes } from "./routes.ts";
import { OpenAiConversationStore } from "./store.ts";

const dayMs = 86_400_000;

export interface OpenAiConversationsFeature extends Feature {
  store: OpenAiConversationStore;
  hook: ConversationHook;
  /** The hook in the shape the Responses API takes (responsesFeature's `conversations`). */
  responsesHook: ResponseConversationHook;
}

export function openAiConversationsFeature(s: SharedServices): OpenAiConversationsFeature {
  const now = () => s.clock.now();
  const { maxItems, maxBytes, retentionDays } = s.config.openAiConversations;
  const limits = { maxItems, maxBytes, retentionMs: retentionDays * dayMs };
  const store = new OpenAiConversationStore({ actors: s.actors, data: s.store, limits, now });
  const hook = conversationHook(store);
  return {
    store,
    hook,
    responsesHook: responsesConversationHook(hook, now),
    actors: [eraseDefinition(createConversationItemsActor()), eraseDefinition(createConversationItemPageActor()), eraseDefinition(createConversationItemRefActor())],
    routes: openAiConversationRoutes({ store, now }),
  };
}
