// Live conversation events (status changes, appended messages, failed
// turns), published on the tenancy store's broadcast channel: in process
// when embedded, Redis pub/sub in the cluster, so a WebSocket on any replica
// sees what an actor on any other replica does.
import type { DataStore } from "../../tenancy/data-store.ts";
import type { AgentMessage, ConversationStatus } from "./types.ts";

export type ConversationEvent =
  | { type: "message.appended"; conversation_id: string; message: AgentMessage }
  | { type: "status.changed"; conversation_id: string; status: ConversationStatus }
  | { type: "turn.failed"; conversation_id: string; error: { code: string; message: string } };

const channel = "conversation-events";

export interface ConversationEventBus {
  publish(event: ConversationEvent): void;
  /**
   * One subscription per process; the caller fans out by conversation id.
   * `wanted` is asked first, so events nobody listens to are never parsed.
   */
  subscribe(onEvent: (event: ConversationEvent, json: string) => void, wanted?: () => boolean): Promise<void>;
}

export function storeEventBus(store: DataStore, onError: (error: unknown) => void): ConversationEventBus {
  return {
    publish(event) {
      store.publish(channel, JSON.stringify(event)).catch(onError);
    },
    async subscribe(onEvent, wanted) {
      await store.subscribe(channel, (message) => {
        if (wanted && !wanted()) return;
        try {
          onEvent(JSON.parse(message) as ConversationEvent, message);
        } catch (error) {
          onError(error);
        }
      });
    },
  };
}
