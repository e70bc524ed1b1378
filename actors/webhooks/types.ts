// The webhook resources (docs/api/webhooks.md): the webhook as returned, the
// delivery record (one per attempt), the event payload receivers get, and the
// WebhookActor's state. Zod schemas, so the actor's state is checked at
// every commit and the routes' OpenAPI is generated from the same shapes.
import { z } from "zod";
import { uriOut } from "../../core/uri-schema.ts";

import { subscribableEvents, webhookEventTypes } from "./events.ts";

export const webhookStatusSchema = z.enum(["active", "inactive", "disabled"]);
export type WebhookStatus = z.infer<typeof webhookStatusSchema>;

export const webhookSchema = z.object({
  id: z.string(),
  url: uriOut(),
  events: z.array(z.enum(subscribableEvents)),
  status: webhookStatusSchema,
  /** Why the webhook was disabled (410 Gone, or the retry schedule exhausted); null otherwise. */
  disabled_reason: z.string().nullable(),
  created_at: z.string(),
});
export type Webhook = z.infer<typeof webhookSchema>;

export const deliverySchema = z.object({
  id: z.string(),
  event_id: z.string(),
  event_type: z.enum(webhookEventTypes),
  /** 1 for the first attempt; every retry of the event adds one. */
  attempt: z.number().int().min(1),
  status: z.enum(["pending", "succeeded", "failed"]),
  /** The receiver's HTTP status; null when no answer came (refused, unreachable, timeout) or not yet attempted. */
  response_status: z.number().int().nullable(),
  error: z.string().nullable(),
  duration_ms: z.number().int().nullable(),
  created_at: z.string(),
  /** Pending: when this attempt is due. Failed: when the next attempt is due, null when none follows. */
  next_attempt_at: z.string().nullable(),
});
export type Delivery = z.infer<typeof deliverySchema>;

/** What receivers get: `{id, type, created_at, data}` (each type's `data` schema: events.ts; the emitters are type-checked against it). */
export const eventPayloadSchema = z.object({
  id: z.string().min(1).max(200),
  type: z.enum(webhookEventTypes),
  created_at: z.string(),
  data: z.record(z.string(), z.unknown()),
});
export type EventPayload = z.infer<typeof eventPayloadSchema>;

/**
 * An event already in the actor's state: it was parsed with
 * eventPayloadSchema when it came in (the accept and test inputs), and only
 * the actor writes its state, so each commit checks its shape cheaply
 * instead of walking every payload again (with a full outbox that walk was
 * a good part of a turn).
 */
const keptEventSchema = z.custom<EventPayload>(
  (value) =>
    typeof value === "object" &&
    value !== null &&
    typeof (value as Record<string, unknown>)["id"] === "string" &&
    (webhookEventTypes as readonly unknown[]).includes((value as Record<string, unknown>)["type"]) &&
    typeof (value as Record<string, unknown>)["created_at"] === "string" &&
    typeof (value as Record<string, unknown>)["data"] === "object",
  "an event payload",
);

/**
 * Whose events a webhook receives (docs/guides/access-control.md). null: the whole
 * organization's (made with an owner's or admin's session, or stored before
 * audiences existed). Otherwise the events of one environment: the one of
 * the API key that made it, plus its project's budget alerts when that key
 * is live (budgets count live usage only).
 */
export const webhookAudienceSchema = z.object({ environment_id: z.string(), project_id: z.string(), live: z.boolean() }).nullable();
export type WebhookAudience = z.infer<typeof webhookAudienceSchema>;

/** Where an event belongs: a job's environment, or (environment null) a whole project's, as a budget alert. */
export interface EventOrigin {
  organization_id: string;
  project_id: string | null;
  environment_id: string | null;
}

/** Whether a webhook of `audience` receives an event of `origin` (same organization assumed). */
export function audienceReceives(audience: WebhookAudience, origin: EventOrigin): boolean {
  if (audience === null) return true;
  if (origin.environment_id !== null) return origin.environment_id === audience.environment_id;
  return audience.live && origin.project_id === audience.project_id;
}

/**
 * `secret` is sealed (AES-256-GCM, secret-box.ts); one stored before
 * encryption existed is plaintext until the actor's next turn seals it.
 */
const storedWebhookSchema = webhookSchema.extend({ organization_id: z.string(), secret: z.string(), audience: webhookAudienceSchema.default(null) });
export type StoredWebhook = z.infer<typeof storedWebhookSchema>;

/** An event still to deliver: its payload, attempts made so far, and its pending delivery record's id and creation time. */
const outboxEntrySchema = z.object({
  event: keptEventSchema,
  attempts: z.number().int().min(0),
  next_attempt_ms: z.number(),
  delivery_id: z.string(),
  /** When the pending record was created: with the fields above, the whole record (settling rewrites it without reading it). */
  record_created_ms: z.number().default(0),
  /** Set while an attempt is out (sent outside the turn): its result is expected by then, else it counts as failed. */
  in_flight_until: z.number().nullable(),
  /** A caller (the test or retry route) waits for this attempt's outcome: it is announced on the delivery bus. */
  announce: z.boolean().default(false),
});
export type OutboxEntry = z.infer<typeof outboxEntrySchema>;

/**
 * Kept small on purpose (it is read, checked and written whole every turn):
 * the delivery records and finished events' payloads live in the data store
 * (delivery-log.ts); the state lists only their ids.
 */
export const webhookStateSchema = z.object({
  webhook: storedWebhookSchema.nullable(),
  outbox: z.array(outboxEntrySchema),
  /** Ids of the delivery records, newest first, at most WEBHOOK_MAX_DELIVERIES. */
  delivery_ids: z.array(z.string()).default([]),
  /** Ids of recently finished events (newest first, at most MAX_RECENT_EVENTS): idempotent accepts, retries by delivery id. */
  recent_event_ids: z.array(z.string()).default([]),
  /** When the durable "deliver" reminder is armed to fire next (null: none armed). */
  reminder_due_ms: z.number().nullable(),
});
export type WebhookState = z.infer<typeof webhookStateSchema>;

/** One attempt handed to the dispatcher: everything needed to sign and send it. */
export const dispatchedAttemptSchema = z.object({ delivery_id: z.string(), url: z.string(), secret: z.string(), event: eventPayloadSchema });
export type DispatchedAttempt = z.infer<typeof dispatchedAttemptSchema>;

/** What the dispatcher reports back to the actor per attempt. */
export const attemptResultSchema = z.object({
  delivery_id: z.string(),
  /** The receiver's HTTP status; null when no answer came. */
  status: z.number().int().nullable(),
  error: z.string().nullable(),
  retry_after: z.string().nullable(),
  duration_ms: z.number().int().min(0),
});
export type AttemptResult = z.infer<typeof attemptResultSchema>;

export function toPublicWebhook(stored: StoredWebhook): Webhook {
  const { id, url, events, status, disabled_reason, created_at } = stored;
  return { id, url, events, status, disabled_reason, created_at };
}
