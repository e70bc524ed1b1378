// The EventPublisher (core/organization-events.ts) behind job and budget
// events: finds the organization's active webhooks subscribed to the event's
// kind in the directory and has each WebhookActor accept (persist) the event;
// publish resolves once every one of them has. The actor sends it in the
// same turn. Accepts are batched per webhook: while one accept call is
// running, further events for that webhook wait and go together in the next
// call, so under load a turn (one durable commit) carries many events
// instead of one each. The dispatcher's results come back through here too
// (`report`), and this is the one place they are batched: while a call is
// running for the webhook they wait and ride in its next accept, so under
// load one turn both records the last batch's attempts and takes the next
// batch (one commit instead of two); with no event to carry them they go
// together in one settle call.
import type { EventPublisher, OrganizationEvent } from "../../core/organization-events.ts";
import type { RefOf } from "../actor.ts";
import { callActor, type ActorHost } from "../host.ts";
import type { WebhookDirectory } from "./directory.ts";
import type { AttemptResult, EventPayload } from "./types.ts";
import type { WebhookActorDefinition } from "./webhook-actor.ts";

/** Events per accept call at most (bounds one turn's work and input size). */
const maxBatch = 200;

interface Waiting {
  /** null: a results-only report (no event to accept). */
  event: EventPayload | null;
  organizationId: string;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class WebhookPublisher implements EventPublisher {
  private readonly actors: ActorHost;
  private readonly actor: RefOf<WebhookActorDefinition>;
  private readonly directory: WebhookDirectory;
  /** Webhook id → events waiting for the running accept call to finish. */
  private readonly queues = new Map<string, Waiting[]>();
  /** Webhook id → attempt results waiting to ride in its next accept (or settle) call. */
  private readonly results = new Map<string, AttemptResult[]>();

  /**
   * `actor` may be a reference (`actorRef`): the definition dispatches through the dispatcher, which reports to
   * this publisher, so the publisher is built first, naming the actor, and nothing is connected afterwards.
   */
  constructor(deps: { actors: ActorHost; actor: RefOf<WebhookActorDefinition>; directory: WebhookDirectory }) {
    this.actors = deps.actors;
    this.actor = deps.actor;
    this.directory = deps.directory;
  }

  async publish(event: OrganizationEvent): Promise<void> {
    const ids = await this.directory.subscribed(event, event.type);
    const payload: EventPayload = { id: event.id, type: event.type, created_at: event.created_at, data: event.data };
    await Promise.all(ids.map((id) => this.accept(id, event.organization_id, payload)));
  }

  /** Records attempt results (the dispatcher's report): with the next accept when one is on its way, else in a settle call. */
  report(webhookId: string, results: AttemptResult[]): Promise<void> {
    const carried = this.results.get(webhookId);
    if (carried) carried.push(...results);
    else this.results.set(webhookId, [...results]);
    if (this.queues.has(webhookId)) return Promise.resolve(); // the running drain takes them
    return new Promise((resolve, reject) => {
      this.queues.set(webhookId, [{ event: null, organizationId: "", resolve, reject }]);
      void this.drain(webhookId);
    });
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
      const reports = waiting.filter((w) => w.event === null);
      const events = waiting.filter((w) => w.event !== null);
      waiting.length = 0;
      waiting.push(...events);
      // One webhook belongs to one organization, so a batch shares it; events of another are refused by the actor.
      const organizationId = waiting[0]?.organizationId;
      const batch: Waiting[] = [...reports];
      for (let i = 0; i < waiting.length && batch.length - reports.length < maxBatch; ) {
        if (waiting[i]!.organizationId === organizationId) batch.push(...waiting.splice(i, 1));
        else i++;
      }
      const results = this.results.get(webhookId) ?? [];
      this.results.delete(webhookId);
      const accepted = batch.flatMap((w) => (w.event ? [w.event] : []));
      try {
        if (organizationId !== undefined) {
          await callActor(this.actors, this.actor, webhookId, "accept", { organization_id: organizationId, events: accepted, results });
        } else if (results.length > 0) {
          await callActor(this.actors, this.actor, webhookId, "settle", { results });
        }
        for (const w of batch) w.resolve();
      } catch (error) {
        for (const w of batch) w.reject(error);
        // The accept failed (an overloaded or moving actor): its carried results still count, so
        // they are recorded on their own — else every one of those attempts would be sent again once its lease ran out.
        if (organizationId !== undefined && results.length > 0) {
          await callActor(this.actors, this.actor, webhookId, "settle", { results }).catch(() => undefined);
        }
      }
    }
    this.queues.delete(webhookId);
    // Results reported while the last call ran, with no event after them: they go in a settle call of their own.
    if (this.results.has(webhookId)) void this.report(webhookId, []).catch(() => undefined);
  }
}
