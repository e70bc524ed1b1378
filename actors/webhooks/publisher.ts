// The EventPublisher (core/organization-events.ts) behind job and budget
// events: finds the organization's active webhooks subscribed to the event's
// kind in the directory and has each WebhookActor accept (persist) the event;
// publish resolves once every one of them has. The actor sends it in the
// same turn. Accepts are batched per webhook: while one accept call is
// running, further events for that webhook wait and go together in the next
// call, so under load a turn (one durable commit) carries many events
// instead of one each.
import type { EventPublisher, OrganizationEvent } from "../../core/organization-events.ts";
import { callActor, type ActorHost } from "../host.ts";
import type { WebhookDirectory } from "./directory.ts";
import type { EventPayload } from "./types.ts";
import type { WebhookActorDefinition } from "./webhook-actor.ts";

/** Events per accept call at most (bounds one turn's work and input size). */
const maxBatch = 200;

interface Waiting {
  event: EventPayload;
  organizationId: string;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class WebhookPublisher implements EventPublisher {
  private readonly actors: ActorHost;
  private readonly actor: WebhookActorDefinition;
  private readonly directory: WebhookDirectory;
  /** Webhook id → events waiting for the running accept call to finish. */
  private readonly queues = new Map<string, Waiting[]>();

  constructor(deps: { actors: ActorHost; actor: WebhookActorDefinition; directory: WebhookDirectory }) {
    this.actors = deps.actors;
    this.actor = deps.actor;
    this.directory = deps.directory;
  }

  async publish(event: OrganizationEvent): Promise<void> {
    const ids = await this.directory.subscribed(event.organization_id, event.type);
    const payload: EventPayload = { id: event.id, type: event.type, created_at: event.created_at, data: event.data };
    await Promise.all(ids.map((id) => this.accept(id, event.organization_id, payload)));
  }

  /** Resolves once no accept call started here is running (shutdown, tests). */
  async idle(): Promise<void> {
    while (this.queues.size > 0) await new Promise((resolve) => setTimeout(resolve, 5));
  }

  private accept(webhookId: string, organizationId: string, event: EventPayload): Promise<void> {
    return new Promise((resolve, reject) => {
      const waiting = this.queues.get(webhookId);
      const entry = { event, organizationId, resolve, reject };
      if (waiting) waiting.push(entry);
      else {
        this.queues.set(webhookId, [entry]);
        void this.drain(webhookId);
      }
    });
  }

  /** Sends the webhook's waiting events, a batch per call, until none wait. */
  private async drain(webhookId: string): Promise<void> {
    const waiting = this.queues.get(webhookId) ?? [];
    while (waiting.length > 0) {
      // One webhook belongs to one organization, so a batch shares it; events of another are refused by the actor.
      const organizationId = waiting[0]!.organizationId;
      const batch: Waiting[] = [];
      for (let i = 0; i < waiting.length && batch.length < maxBatch; ) {
        if (waiting[i]!.organizationId === organizationId) batch.push(...waiting.splice(i, 1));
        else i++;
      }
      try {
        await callActor(this.actors, this.actor, webhookId, "accept", { organization_id: organizationId, events: batch.map((w) => w.event) });
        for (const w of batch) w.resolve();
      } catch (error) {
        for (const w of batch) w.reject(error);
      }
    }
    this.queues.delete(webhookId);
  }
}
