// Events an organization's webhooks receive (docs/api/webhooks.md):
// the contract between what emits them (JobActor: job.completed/job.failed;
// budgets: budget.alert; the webhook test route: webhook.test) and what
// delivers them (the WebhookActors). Emitters choose the event id
// deterministically (e.g. from the job id and the event type), so an emitter
// that re-publishes after a crash publishes the same id, and delivery is
// idempotent on it: each subscribed webhook delivers a given id once (plus its
// retries), never twice as two events.

/**
 * Event type → the `data` it carries. Declared empty here and filled in by
 * the event catalogue (actors/webhooks/events.ts, by module augmentation),
 * which holds each type's zod schema: core sits below the job's schema, yet
 * every emitter, at any layer, has its `data` checked against the catalogue.
 */
export interface OrganizationEventData {}

export type OrganizationEventType = keyof OrganizationEventData & string;

/**
 * The payload delivered to receivers is `{id, type, created_at, data}`;
 * organization_id, project_id and environment_id route it: a webhook made
 * with a session receives every event of its organization, one made with an
 * API key only the events of that key's environment (docs/guides/access-control.md).
 */
interface EventEnvelope<Type extends OrganizationEventType> {
  id: string;
  type: Type;
  organization_id: string;
  /** The project the event belongs to. */
  project_id: string | null;
  /** The environment it belongs to (a job's: its key's); null for an event of a whole project (budget.alert). */
  environment_id: string | null;
  /** ISO 8601 UTC. */
  created_at: string;
  data: OrganizationEventData[Type];
}

/** One event of any type, its `data` matching its `type`. */
export type OrganizationEvent = { [Type in OrganizationEventType]: EventEnvelope<Type> }[OrganizationEventType];

/**
 * Hands an event to every active webhook of its organization subscribed to
 * its type. Resolves once the event is durably accepted for delivery (not
 * delivered); rejects if it could not be accepted, so the emitter retries.
 * Publishing the same event id again is harmless.
 */
export interface EventPublisher {
  publish(event: OrganizationEvent): Promise<void>;
}

/** Publishes nowhere: for tests and hosts without webhooks. */
export const noEvents: EventPublisher = { publish: async () => undefined };
