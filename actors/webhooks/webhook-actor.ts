// WebhookActor: one per webhook (docs/api/webhooks.md). It holds
// the webhook, an outbox of events still to deliver and the ids of its recent
// delivery records and finished events; the records and those events'
// payloads are documents in the data store (delivery-log.ts), so the state
// each turn reads and writes stays small. An event is accepted (persisted,
// idempotent on its id) in one turn; a `pump` turn hands every due event to
// the dispatcher, which signs and sends them outside the turn and reports
// back through `settle`, which records one delivery per attempt and
// schedules the retries. Each attempt out carries a lease: a process killed
// mid-attempt never settles it, so when the lease expires the durable
// "deliver" reminder (periodic, so it fires again even after a crash during
// its own turn) counts the attempt as failed and the event goes again with
// the same id — at least once, never lost.
import { z } from "zod";
import { isoTime } from "../../core/clock.ts";
import type { WebhooksConfig } from "../../core/config.ts";
import { TroupeError } from "../../core/errors.ts";
import { prefixedId } from "../../core/ids.ts";
import { defineActor, type ActorContext } from "../actor.ts";
import type { DeliveryLog, TurnWrites } from "./delivery-log.ts";
import type { WebhookDirectory } from "./directory.ts";
import type { SecretBox } from "./secret-box.ts";
import { maxAttempts, nextDelayMs, parseRetryAfter } from "./schedule.ts";
import {
  attemptResultSchema,
  eventPayloadSchema,
  subscribableEvents,
  toPublicWebhook,
  webhookAudienceSchema,
  webhookStateSchema,
  type AttemptResult,
  type Delivery,
  type DispatchedAttempt,
  type EventPayload,
  type OutboxEntry,
  type StoredWebhook,
  type Webhook,
  type WebhookState,
} from "./types.ts";

export const WEBHOOK_ACTOR = "WebhookActor";

/** Events waiting per webhook; past it a new event is recorded as a failed delivery instead (bounded state). */
export const MAX_OUTBOX = 1000;
/** Finished events whose payload is kept (retry by delivery id, idempotent re-publish). */
export const MAX_RECENT_EVENTS = 50;
const reminderName = "deliver";

export interface WebhookActorDeps {
  /** Sends the attempts outside the turn; their results come back through `settle`. Must not throw. */
  dispatch(webhookId: string, attempts: DispatchedAttempt[]): void;
  directory: WebhookDirectory;
  /** Where the delivery records and finished events' payloads are kept. */
  log: DeliveryLog;
  config: WebhooksConfig;
  /** Seals the signing secret in the state; opens it for each attempt. */
  secrets: SecretBox;
}

/** `environment_id`: an API key's caller sees only webhooks made by keys of its environment; null: a session, every webhook of the organization. */
const orgInput = z.object({ organization_id: z.string(), environment_id: z.string().nullable().default(null) });
const createInput = orgInput.extend({
  url: z.string(),
  events: z.array(z.enum(subscribableEvents)).min(1),
  /** The plaintext secret (it leaves the turn only sealed). */
  secret: z.string(),
  audience: webhookAudienceSchema.default(null),
});
/** `results`: the dispatcher's reports that waited for this call (recorded first, in the same turn). */
const acceptInput = orgInput.extend({ events: z.array(eventPayloadSchema).min(1), results: z.array(attemptResultSchema).default([]) });
const testInput = orgInput.extend({ event: eventPayloadSchema });
const deliveryInput = orgInput.extend({ delivery_id: z.string() });
const pageInput = orgInput.extend({ limit: z.number().int().min(1).max(100), cursor: z.string().nullable() });

type Ctx = ActorContext<WebhookState>;

function owned(state: WebhookState, caller: { organization_id: string; environment_id: string | null }): StoredWebhook {
  const webhook = state.webhook;
  if (!webhook || webhook.organization_id !== caller.organization_id) throw new TroupeError("not_found", "webhook not found");
  // A key manages only what its environment's keys made; another environment's webhook, or the organization's, does not exist for it.
  if (caller.environment_id !== null && webhook.audience?.environment_id !== caller.environment_id) throw new TroupeError("not_found", "webhook not found");
  return webhook;
}

function requireActive(webhook: StoredWebhook): void {
  if (webhook.status !== "active") {
    throw new TroupeError("conflict", `the webhook is ${webhook.status}${webhook.disabled_reason ? ` (${webhook.disabled_reason})` : ""}; only active webhooks deliver`);
  }
}

/** The pending delivery record of an outbox entry, rebuilt from the entry (it holds every field). */
function pendingRecordOf(entry: OutboxEntry): Delivery {
  return {
    id: entry.delivery_id,
    event_id: entry.event.id,
    event_type: entry.event.type,
    attempt: entry.attempts + 1,
    status: "pending",
    response_status: null,
    error: null,
    duration_ms: null,
    created_at: isoTime(entry.record_created_ms),
    next_attempt_at: isoTime(entry.next_attempt_ms),
  };
}

export function createWebhookActor(deps: WebhookActorDeps) {
  const { config, log } = deps;
  /** How long an attempt out may take before it counts as failed: the POST's own deadline plus room to report back. */
  const leaseMs = config.timeoutMs + 5000;
  /** The reminder's period: it fires again this long after a firing whose turn never finished (a crash). */
  const periodMs = leaseMs + 1000;

  /** Every writing turn starts here; it also seals a secret stored in the clear before encryption existed (committed with the turn). */
  const begin = (ctx: Ctx): TurnWrites => {
    const webhook = ctx.state.webhook;
    if (webhook && !deps.secrets.isSealed(webhook.secret)) webhook.secret = deps.secrets.seal(webhook.secret);
    return log.begin(ctx.id, (attempts) => deps.dispatch(ctx.id, attempts));
  };

  /** Lists a new record (newest first) and writes it unless pending (derived from the outbox); the oldest past WEBHOOK_MAX_DELIVERIES go. */
  const addRecord = (ctx: Ctx, w: TurnWrites, record: Delivery): void => {
    const ids = ctx.state.delivery_ids;
    ids.unshift(record.id);
    if (record.status !== "pending") w.putRecord(record);
    for (const dropped of ids.splice(config.maxDeliveries)) w.dropRecord(dropped);
  };

  /** Writes a listed record's outcome (one trimmed away meanwhile stays gone). */
  const updateRecord = (ctx: Ctx, w: TurnWrites, record: Delivery): void => {
    if (ctx.state.delivery_ids.includes(record.id)) w.putRecord(record);
  };

  /** The records with these ids: the stored outcome, else the pending record its outbox entry describes. */
  const readRecords = async (ctx: Ctx, ids: string[]): Promise<Delivery[]> => {
    const stored = await log.records(ctx.id, ids);
    const pending = new Map<string, OutboxEntry>();
    for (const e of ctx.state.outbox) pending.set(e.delivery_id, e);
    return ids.flatMap((id, i) => {
      const entry = pending.get(id);
      const record = stored[i] ?? (entry ? pendingRecordOf(entry) : undefined);
      return record ? [record] : [];
    });
  };

  /** Keeps a finished event's payload (newest first); the oldest past MAX_RECENT_EVENTS go. */
  const remember = (ctx: Ctx, w: TurnWrites, event: EventPayload, attempts: number): void => {
    const ids = [event.id, ...ctx.state.recent_event_ids.filter((id) => id !== event.id)];
    w.keepEvent(event, attempts);
    for (const dropped of ids.splice(MAX_RECENT_EVENTS)) w.dropEvent(dropped);
    ctx.state.recent_event_ids = ids;
  };

  /** When the outbox next needs a turn: the earliest retry due, or an attempt's lease running out (plus a second). */
  const nextWakeMs = (state: WebhookState): number | undefined => {
    if (state.outbox.length === 0) return undefined;
    let wake = Infinity;
    for (const e of state.outbox) wake = Math.min(wake, e.in_flight_until === null ? e.next_attempt_ms : e.in_flight_until + 1000);
    return wake;
  };

  /** Arms the durable reminder for `dueAtMs` unless it already fires by then. */
  const armReminder = async (ctx: Ctx, dueAtMs: number): Promise<void> => {
    const armed = ctx.state.reminder_due_ms;
    if (armed !== null && armed <= dueAtMs) return;
    await ctx.setReminder(reminderName, Math.max(0, dueAtMs - ctx.clock.now()), periodMs, "pump", { from_reminder: true });
    ctx.state.reminder_due_ms = dueAtMs;
  };

  /** Queues `event` for an attempt now, with its pending delivery record; the caller dispatches. */
  const enqueue = async (ctx: Ctx, w: TurnWrites, event: EventPayload, attemptsMade: number): Promise<Delivery> => {
    const now = ctx.clock.now();
    const entry: OutboxEntry = { event, attempts: attemptsMade, next_attempt_ms: now, delivery_id: prefixedId("dlv", now), record_created_ms: now, in_flight_until: null };
    const record = pendingRecordOf(entry);
    addRecord(ctx, w, record);
    ctx.state.outbox.push(entry);
    // Should the attempt never leave (a crash right after this turn), the reminder sends it.
    await armReminder(ctx, now + periodMs);
    return record;
  };

  /** Ends every pending delivery (deactivation, 410, schedule exhausted): no further attempts. */
  const cancelAll = async (ctx: Ctx, w: TurnWrites, reason: string): Promise<void> => {
    for (const entry of ctx.state.outbox) {
      updateRecord(ctx, w, { ...pendingRecordOf(entry), status: "failed", error: reason, next_attempt_at: null });
      remember(ctx, w, entry.event, entry.attempts);
    }
    ctx.state.outbox = [];
    await ctx.clearReminder(reminderName);
    ctx.state.reminder_due_ms = null;
  };

  const setStatus = async (ctx: Ctx, w: TurnWrites, webhook: StoredWebhook, status: "inactive" | "disabled", reason: string | null): Promise<void> => {
    webhook.status = status;
    webhook.disabled_reason = reason;
    await cancelAll(ctx, w, status === "inactive" ? "cancelled: the webhook was deactivated" : `cancelled: the webhook was disabled (${reason})`);
    await deps.directory.updated(webhook.organization_id, toPublicWebhook(webhook), webhook.audience);
  };

  /** Records one attempt's outcome; returns the reason to disable the webhook, if this outcome calls for it. Finished entries are added to `done`. */
  const settleOne = (ctx: Ctx, w: TurnWrites, entry: OutboxEntry, result: AttemptResult, done: Set<OutboxEntry>): string | undefined => {
    const now = ctx.clock.now();
    const attempted = pendingRecordOf(entry);
    entry.attempts += 1;
    entry.in_flight_until = null;
    const outcome = { response_status: result.status, error: result.error, duration_ms: result.duration_ms };
    const finish = (status: "succeeded" | "failed") => {
      updateRecord(ctx, w, { ...attempted, ...outcome, status, next_attempt_at: null });
      done.add(entry);
      remember(ctx, w, entry.event, entry.attempts);
    };
    if (result.error === null) {
      finish("succeeded");
      return undefined;
    }
    if (result.status === 410) {
      finish("failed");
      return "the receiver answered 410 Gone";
    }
    const delay = nextDelayMs(entry.attempts, config.retryScale, parseRetryAfter(result.retry_after ?? undefined, now));
    if (delay === undefined) {
      finish("failed");
      return `every delivery attempt of event ${entry.event.id} failed (${maxAttempts} attempts over the whole retry schedule)`;
    }
    const dueMs = now + delay;
    updateRecord(ctx, w, { ...attempted, ...outcome, status: "failed", next_attempt_at: isoTime(dueMs) });
    entry.delivery_id = prefixedId("dlv", now);
    entry.record_created_ms = now;
    entry.next_attempt_ms = dueMs;
    addRecord(ctx, w, pendingRecordOf(entry));
    return undefined;
  };

  /** Applies results (from the dispatcher, or expired leases), then disables or re-arms as they call for. */
  const settleAll = async (ctx: Ctx, w: TurnWrites, results: AttemptResult[]): Promise<void> => {
    const webhook = ctx.state.webhook;
    if (!webhook || webhook.status !== "active" || results.length === 0) return;
    // A result whose attempt is no longer out (its lease expired and it went again, or the webhook was deactivated) is stale.
    const out = new Map<string, OutboxEntry>();
    for (const e of ctx.state.outbox) if (e.in_flight_until !== null) out.set(e.delivery_id, e);
    const done = new Set<OutboxEntry>();
    let disableReason: string | undefined;
    for (const result of results) {
      const entry = out.get(result.delivery_id);
      if (!entry) continue;
      out.delete(result.delivery_id);
      disableReason ??= settleOne(ctx, w, entry, result, done);
    }
    if (done.size > 0) ctx.state.outbox = ctx.state.outbox.filter((e) => !done.has(e));
    if (disableReason) {
      await setStatus(ctx, w, webhook, "disabled", disableReason);
      return;
    }
    const wake = nextWakeMs(ctx.state);
    if (wake !== undefined) await armReminder(ctx, wake);
  };

  /** Hands every due event of an active webhook to the turn's dispatch (sent once its writes are durable), each with a lease. */
  const dispatchDue = async (ctx: Ctx, w: TurnWrites): Promise<number> => {
    const webhook = ctx.state.webhook;
    if (webhook?.status !== "active") return 0;
    const now = ctx.clock.now();
    const due = ctx.state.outbox.filter((e) => e.in_flight_until === null && e.next_attempt_ms <= now);
    if (due.length === 0) return 0;
    let secret: string;
    try {
      secret = deps.secrets.open(webhook.secret);
    } catch {
      // Sealed under another WEBHOOK_SECRET_KEY: no attempt can ever be signed, so the webhook stops (and says why)
      // instead of failing every turn that would send, which would also refuse its events upstream.
      await setStatus(ctx, w, webhook, "disabled", "its signing secret cannot be opened with the current WEBHOOK_SECRET_KEY (the key was changed); create the webhook again");
      return 0;
    }
    for (const entry of due) entry.in_flight_until = now + leaseMs;
    w.send(due.map((e) => ({ delivery_id: e.delivery_id, url: webhook.url, secret, event: e.event })));
    return due.length;
  };

  const known = (state: WebhookState, eventId: string): boolean =>
    state.outbox.some((e) => e.event.id === eventId) || state.recent_event_ids.includes(eventId);

  /** A listed delivery record of this webhook, else 404. */
  const listedRecord = async (ctx: Ctx, deliveryId: string): Promise<Delivery> => {
    const record = ctx.state.delivery_ids.includes(deliveryId) ? (await readRecords(ctx, [deliveryId]))[0] : undefined;
    if (!record) throw new TroupeError("not_found", "delivery not found");
    return record;
  };

  return defineActor({
    type: WEBHOOK_ACTOR,
    state: webhookStateSchema,
    initialState: (): WebhookState => ({ webhook: null, outbox: [], delivery_ids: [], recent_event_ids: [], reminder_due_ms: null }),
    methods: {
      create: {
        input: createInput,
        run: async (ctx, input): Promise<Webhook> => {
          if (ctx.state.webhook) throw new TroupeError("conflict", "webhook already exists");
          const webhook: StoredWebhook = {
            id: ctx.id,
            organization_id: input.organization_id,
            url: input.url,
            events: input.events,
            status: "active",
            disabled_reason: null,
            created_at: isoTime(ctx.clock.now()),
            secret: deps.secrets.seal(input.secret),
            audience: input.audience,
          };
          ctx.state.webhook = webhook;
          await deps.directory.created(input.organization_id, toPublicWebhook(webhook), input.audience);
          return toPublicWebhook(webhook);
        },
      },

      get: { input: orgInput, run: async (ctx, input): Promise<Webhook> => toPublicWebhook(owned(ctx.state, input)) },

      deactivate: {
        input: orgInput,
        run: async (ctx, input): Promise<Webhook> => {
          const webhook = owned(ctx.state, input);
          const w = begin(ctx);
          if (webhook.status !== "inactive") await setStatus(ctx, w, webhook, "inactive", null);
          await w.finish();
          return toPublicWebhook(webhook);
        },
      },

      /**
       * Deleting its organization: stops deliveries (pending ones cancelled)
       * and deletes its delivery records and kept event payloads; the host
       * then forgets the actor's state (organization-erasure.ts).
       */
      erase: {
        input: orgInput,
        run: async (ctx, input): Promise<{ erased: true }> => {
          const webhook = owned(ctx.state, input);
          const w = begin(ctx);
          if (webhook.status !== "inactive") await setStatus(ctx, w, webhook, "inactive", null);
          for (const id of ctx.state.delivery_ids) w.dropRecord(id);
          for (const id of ctx.state.recent_event_ids) w.dropEvent(id);
          ctx.state.delivery_ids = [];
          ctx.state.recent_event_ids = [];
          await w.finish();
          return { erased: true };
        },
      },

      /**
       * Persists events for delivery (the publisher's fan-out, batched per
       * webhook) and sends them at once; answers the ids this webhook took.
       */
      accept: {
        input: acceptInput,
        run: async (ctx, input): Promise<{ accepted: string[] }> => {
          const w = begin(ctx);
          await settleAll(ctx, w, input.results);
          const webhook = ctx.state.webhook;
          const accepted: string[] = [];
          if (webhook && webhook.organization_id === input.organization_id && webhook.status === "active") {
            for (const event of input.events) {
              if (!(webhook.events as string[]).includes(event.type)) continue;
              if (known(ctx.state, event.id)) {
                accepted.push(event.id); // a re-publish: already taken
                continue;
              }
              if (ctx.state.outbox.length >= MAX_OUTBOX) {
                const now = ctx.clock.now();
                const entry: OutboxEntry = { event, attempts: 0, next_attempt_ms: now, delivery_id: prefixedId("dlv", now), record_created_ms: now, in_flight_until: null };
                addRecord(ctx, w, { ...pendingRecordOf(entry), status: "failed", error: `dropped: ${MAX_OUTBOX} events were already waiting for this webhook`, next_attempt_at: null });
                continue;
              }
              await enqueue(ctx, w, event, 0);
              accepted.push(event.id);
            }
            await dispatchDue(ctx, w);
          }
          await w.finish();
          return { accepted };
        },
      },

      /** Sends what is due; the reminder calls it (retries, expired leases, crash backstop). */
      pump: {
        input: z.object({ from_reminder: z.boolean().default(false) }),
        run: async (ctx, input): Promise<{ dispatched: number }> => {
          const w = begin(ctx);
          // A fired reminder is re-armed below only if there is still something to wake up for.
          if (input.from_reminder) ctx.state.reminder_due_ms = null;
          const now = ctx.clock.now();
          if (ctx.state.webhook?.status === "active") {
            const expired = ctx.state.outbox.filter((e) => e.in_flight_until !== null && e.in_flight_until <= now);
            const lost = "no result came back for this attempt (the process delivering it stopped, or it overran its lease)";
            await settleAll(
              ctx,
              w,
              expired.map((e) => ({ delivery_id: e.delivery_id, status: null, error: lost, retry_after: null, duration_ms: 0 })),
            );
          }
          const dispatched = await dispatchDue(ctx, w);
          const wake = nextWakeMs(ctx.state);
          if (wake !== undefined) await armReminder(ctx, wake);
          else if (input.from_reminder) await ctx.clearReminder(reminderName);
          await w.finish();
          return { dispatched };
        },
      },

      /** The dispatcher's report: one result per attempt it sent. */
      settle: {
        input: z.object({ results: z.array(attemptResultSchema) }),
        run: async (ctx, input): Promise<{ settled: number }> => {
          const w = begin(ctx);
          await settleAll(ctx, w, input.results);
          await w.finish();
          return { settled: input.results.length };
        },
      },

      /** Sends a signed webhook.test event (queued now; the route pumps). */
      test: {
        input: testInput,
        run: async (ctx, input): Promise<Delivery> => {
          requireActive(owned(ctx.state, input));
          const w = begin(ctx);
          const record = await enqueue(ctx, w, input.event, 0);
          await dispatchDue(ctx, w);
          await w.finish();
          return record;
        },
      },

      /** Sends a delivery's event again now, same event id: a new attempt. */
      retry: {
        input: deliveryInput,
        run: async (ctx, input): Promise<Delivery> => {
          const webhook = owned(ctx.state, input);
          const record = await listedRecord(ctx, input.delivery_id);
          requireActive(webhook);
          const w = begin(ctx);
          const now = ctx.clock.now();
          const waiting = ctx.state.outbox.find((e) => e.event.id === record.event_id);
          if (waiting) {
            // Waiting for a retry: it goes now. Already out: its attempt is the answer.
            if (waiting.in_flight_until === null) {
              waiting.next_attempt_ms = now; // its pending record, derived from the entry, says so
              await dispatchDue(ctx, w);
            }
            await w.finish();
            return ctx.state.delivery_ids.includes(waiting.delivery_id) ? pendingRecordOf(waiting) : record;
          }
          const finished = ctx.state.recent_event_ids.includes(record.event_id) ? await log.finished(ctx.id, record.event_id) : undefined;
          if (!finished) throw new TroupeError("conflict", `event ${record.event_id} is no longer kept (the last ${MAX_RECENT_EVENTS} events are)`);
          // Back in the outbox: it is kept again (with its new attempts) when it finishes.
          ctx.state.recent_event_ids = ctx.state.recent_event_ids.filter((id) => id !== record.event_id);
          w.dropEvent(record.event_id);
          const queued = await enqueue(ctx, w, finished.event, finished.attempts);
          await dispatchDue(ctx, w);
          await w.finish();
          return queued;
        },
      },

      delivery: {
        input: deliveryInput,
        run: async (ctx, input): Promise<Delivery> => {
          owned(ctx.state, input);
          return listedRecord(ctx, input.delivery_id);
        },
      },

      /** Newest first; the cursor is the last record's id (as a store cursor, so the routes check one format). */
      deliveries: {
        input: pageInput,
        run: async (ctx, input): Promise<{ data: Delivery[]; next_cursor: string | null }> => {
          owned(ctx.state, input);
          const all = ctx.state.delivery_ids;
          let start = 0;
          if (input.cursor !== null) {
            const after = all.indexOf(input.cursor);
            start = after >= 0 ? after + 1 : all.length;
          }
          const ids = all.slice(start, start + input.limit);
          const data = await readRecords(ctx, ids);
          const last = ids.at(-1);
          return { data, next_cursor: last && start + input.limit < all.length ? last : null };
        },
      },
    },
  });
}

export type WebhookActorDefinition = ReturnType<typeof createWebhookActor>;
