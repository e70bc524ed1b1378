// The EventPublisher (core/organization-events.ts) behind job and budget
// events: finds the organization's active webhooks subscribed to the event's
// kind in the directory, has each WebhookActor accept (persist) the event —
// publish resolves once every one of them has — and then asks each to pump
// at once rather than wait for its reminder. Pumps are coalesced per webhook:
// while one is running, further publishes only ask for one more afterwards,
// so a burst costs a few delivery turns, not one per event.
import type { Logger } from "../../core/log.ts";
import type { EventPublisher, OrganizationEvent } from "../../core/organization-events.ts";
import { callActor, type ActorHost } from "../host.ts";
import type { WebhookDirectory } from "./directory.ts";
import type { EventPayload } from "./types.ts";
import type { WebhookActorDefinition } from "./webhook-actor.ts";

export class WebhookPublisher implements EventPublisher {
  private readonly actors: ActorHost;
  private readonly actor: WebhookActorDefinition;
  private readonly directory: WebhookDirectory;
  private readonly log: Logger;
  /** Webhook id → whether another pump was asked for while one runs. */
  private readonly pumping = new Map<string, { again: boolean }>();

  constructor(deps: { actors: ActorHost; actor: WebhookActorDefinition; directory: WebhookDirectory; log: Logger }) {
    this.actors = deps.actors;
    this.actor = deps.actor;
    this.directory = deps.directory;
    this.log = deps.log;
  }

  async publish(event: OrganizationEvent): Promise<void> {
    const ids = await this.directory.subscribed(event.organization_id, event.type);
    const payload: EventPayload = { id: event.id, type: event.type, created_at: event.created_at, data: event.data };
    const answers = await Promise.all(
      ids.map(async (id) => ({ id, ...(await callActor(this.actors, this.actor, id, "accept", { organization_id: event.organization_id, event: payload })) })),
    );
    for (const answer of answers) if (answer.accepted) this.pump(answer.id);
  }

  /** Asks the webhook to send what is due now; never throws (the reminder is the backstop). */
  pump(id: string): void {
    const running = this.pumping.get(id);
    if (running) {
      running.again = true;
      return;
    }
    const state = { again: false };
    this.pumping.set(id, state);
    const run = (): void => {
      state.again = false;
      callActor(this.actors, this.actor, id, "pump", {})
        .catch((error: unknown) => this.log.warn("webhook pump failed; its reminder will retry", { webhook_id: id, error }))
        .finally(() => {
          if (state.again) run();
          else this.pumping.delete(id);
        });
    };
    run();
  }

  /** Resolves once no pump started here is running (shutdown, tests). */
  async idle(): Promise<void> {
    while (this.pumping.size > 0) await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
