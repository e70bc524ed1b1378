// Live conversation events (status changes, appended messages, failed
// turns), published on the tenancy store's broadcast channel
// (actors/event-bus.ts).
import type { DataStore } from "../../core/data-store.ts";
import { storeResourceEventBus, type ResourceEventBus } from "../event-bus.ts";
import type { AgentMessage, ConversationStatus } from "./types.ts";

export type ConversationEvent =
  | { type: "message.appended"; conversation_id: string; message: AgentMessage }
  | { type: "status.changed"; conversation_id: string; status: ConversationStatus }
  | { type: "turn.failed"; conversation_id: string; error: { code: string; message: string } };

/** One channel per conversation. */
export type ConversationEventBus = ResourceEventBus<ConversationEvent>;

export function storeConversationEventBus(store: DataStore, onError: (error: unknown) => void): ConversationEventBus {
  return storeResourceEventBus<ConversationEvent>(store, "conversation-events", (event) => event.conversation_id, onError);
}
