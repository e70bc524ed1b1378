// A typed event bus over the tenancy store's broadcast channel: in process
// when embedded, Redis pub/sub in the cluster, so a WebSocket on any replica
// sees what an actor on any other replica does. One bus per kind of event
// (conversation events, job events), each on its own channel.
import type { DataStore } from "../tenancy/data-store.ts";

export interface EventBus<Event> {
  publish(event: Event): void;
  /**
   * One subscription per process; the caller fans out by resource id.
   * `wanted` is asked first, so events nobody listens to are never parsed.
   */
  subscribe(onEvent: (event: Event, json: string) => void, wanted?: () => boolean): Promise<void>;
}

export function storeEventBus<Event>(
  store: Pick<DataStore, "publish" | "subscribe">,
  channel: string,
  onError: (error: unknown) => void,
): EventBus<Event> {
  return {
    publish(event) {
      store.publish(channel, JSON.stringify(event)).catch(onError);
    },
    async subscribe(onEvent, wanted) {
      await store.subscribe(channel, (message) => {
        if (wanted && !wanted()) return;
        try {
          // Only this bus publishes on its channel, and it publishes Event.
          onEvent(JSON.parse(message) as Event, message);
        } catch (error) {
          onError(error);
        }
      });
    },
  };
}
