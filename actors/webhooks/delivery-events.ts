// The outcomes of the attempts a caller waits for — the test and retry
// routes — on the event bus (actors/event-bus.ts: in process embedded, Redis
// pub/sub in the cluster, so the route on any replica hears the actor on
// any other). The WebhookActor announces such an attempt's record once the
// turn that settled it has committed (ctx.afterCommit); the route watches
// the webhook before it calls the actor, so an outcome that arrives before
// the call returns is kept, and answers from the announced record itself —
// never by reading the delivery log, whose oldest records are trimmed under
// load. Only those attempts are announced, so ordinary deliveries cost the
// bus nothing.
import type { DataStore } from "../../core/data-store.ts";
import { storeEventBus, type EventBus } from "../event-bus.ts";
import type { Delivery } from "./types.ts";

export interface DeliveryAnnouncement {
  webhook_id: string;
  delivery: Delivery;
}

interface Watch {
  /** Outcomes heard so far, by delivery id. */
  heard: Map<string, Delivery>;
  waiting: { deliveryId: string; resolve: (record: Delivery) => void } | undefined;
}

export class DeliveryWatcher {
  private readonly bus: EventBus<DeliveryAnnouncement>;
  /** Webhook id → the watches open on it. */
  private readonly watches = new Map<string, Set<Watch>>();

  constructor(bus: EventBus<DeliveryAnnouncement>) {
    this.bus = bus;
  }

  /** One subscription per process; announcements are parsed only while someone watches. */
  async start(): Promise<void> {
    await this.bus.subscribe(
      (event) => this.heard(event),
      () => this.watches.size > 0,
    );
  }

  announce(webhookId: string, delivery: Delivery): void {
    this.bus.publish({ webhook_id: webhookId, delivery });
  }

  /**
   * Watches the webhook's announcements from now on; `outcome(id, ms)`
   * resolves with the delivery's announced record, or undefined once `ms`
   * passed without it. Close the watch when done.
   */
  watch(webhookId: string): { outcome(deliveryId: string, timeoutMs: number): Promise<Delivery | undefined>; close(): void } {
    const watch: Watch = { heard: new Map(), waiting: undefined };
    let set = this.watches.get(webhookId);
    if (!set) this.watches.set(webhookId, (set = new Set()));
    set.add(watch);
    return {
      outcome: (deliveryId, timeoutMs) => {
        const heard = watch.heard.get(deliveryId);
        if (heard) return Promise.resolve(heard);
        return new Promise((resolve) => {
          const timer = setTimeout(() => resolve(undefined), timeoutMs);
          watch.waiting = {
            deliveryId,
            resolve: (record) => {
              clearTimeout(timer);
              resolve(record);
            },
          };
        });
      },
      close: () => {
        set.delete(watch);
        if (set.size === 0) this.watches.delete(webhookId);
      },
    };
  }

  private heard({ webhook_id, delivery }: DeliveryAnnouncement): void {
    for (const watch of this.watches.get(webhook_id) ?? []) {
      if (watch.waiting?.deliveryId === delivery.id) watch.waiting.resolve(delivery);
      else watch.heard.set(delivery.id, delivery);
    }
  }
}

/** The watcher on the store's "webhook-deliveries" channel, subscribed. */
export async function startDeliveryWatcher(store: Pick<DataStore, "publish" | "subscribe">, onError: (error: unknown) => void): Promise<DeliveryWatcher> {
  const watcher = new DeliveryWatcher(storeEventBus<DeliveryAnnouncement>(store, "webhook-deliveries", onError));
  await watcher.start();
  return watcher;
}
