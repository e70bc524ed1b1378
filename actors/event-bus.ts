// A typed event bus over the tenancy store's broadcast channel: in process
// when embedded, Redis pub/sub in the cluster, so a WebSocket on any replica
// sees what an actor on any other replica does. One bus per kind of event,
// each on its own channel; a resource's events (one conversation's, one
// job's) on a channel of their own, so a replica receives only the events of
// the resources its sockets watch.
import type { DataStore } from "../core/data-store.ts";

export interface EventBus<Event> {
  publish(event: Event): void;
  /**
   * One subscription per process; the caller fans out by resource id.
   * `wanted` is asked first, so events nobody listens to are never parsed.
   */
  subscribe(onEvent: (event: Event, json: string) => void, wanted?: () => boolean): Promise<void>;
}

/** A message handler that parses the bus's JSON and hands it on; what fails goes to onError. */
function delivering<Event>(onEvent: (event: Event, json: string) => void, onError: (error: unknown) => void): (message: string) => void {
  return (message) => {
    try {
      // Only a bus publishes on its channels, and it publishes Event.
      onEvent(JSON.parse(message) as Event, message);
    } catch (error) {
      onError(error);
    }
  };
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
      const deliver = delivering(onEvent, onError);
      await store.subscribe(channel, (message) => {
        if (wanted && !wanted()) return;
        deliver(message);
      });
    },
  };
}

/** Events that each belong to one resource, published on that resource's own channel. */
export interface ResourceEventBus<Event> {
  publish(event: Event): void;
  /**
   * Listens to one resource's events. Resolves once subscribed — every event
   * published after that reaches `onEvent` — with the function that stops.
   */
  listen(resourceId: string, onEvent: (event: Event, json: string) => void): Promise<() => Promise<void>>;
}

/**
 * Channel `<channel>:<resource id>` per resource. One channel for all of
 * them had every replica receive, and drop, every turn's events: the
 * cluster's pub/sub traffic grew with turns × replicas.
 */
export function storeResourceEventBus<Event>(
  store: Pick<DataStore, "publish" | "subscribe" | "unsubscribe">,
  channel: string,
  resourceOf: (event: Event) => string,
  onError: (error: unknown) => void,
): ResourceEventBus<Event> {
  return {
    publish(event) {
      store.publish(`${channel}:${resourceOf(event)}`, JSON.stringify(event)).catch(onError);
    },
    async listen(resourceId, onEvent) {
      const resourceChannel = `${channel}:${resourceId}`;
      const onMessage = delivering(onEvent, onError);
      await store.subscribe(resourceChannel, onMessage);
      return () => store.unsubscribe(resourceChannel, onMessage);
    },
  };
}
