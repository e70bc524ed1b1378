// Live conversation events (status changes, appended messages, failed
// turns), published on the tenancy store's broadcast channel
// (actors/event-bus.ts).
import type { DataStore } from "../../tenancy/data-store.ts";
import { storeEventBus, type EventBus } from "../event-bus.ts";
import type { AgentMessage, ConversationStatus } from "./types.ts";

export type ConversationEvent =
  | { type: "message.appended"; conversation_id: string; message: AgentMessage }
  | { type: "status.changed"; conversation_id: string; status: ConversationStatus }
  | { type: "turn.failed"; conversation_id: string; error: { code: string; message: string } };

/** The caller fans out by conversation id. */
export type ConversationEventBus = EventBus<ConversationEvent>;

export function storeConversationEventBus(store: DataStore, onError: (error: unknown) => void): ConversationEventBus {
  return storeEventBus<ConversationEvent>(store, "conversation-events", onError);
}
