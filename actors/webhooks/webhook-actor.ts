// WebhookActor: one per webhook (DESIGN.md §3 Events, §4 Webhooks). It holds
// the webhook, an outbox of events still to deliver, the recent delivery
// records and the payloads of recently finished events. An event is accepted
// (persisted, idempotent on its id) in one turn; a `pump` turn hands every
// due event to the dispatcher, which signs and sends them outside the turn
// and reports back through `settle`, which records one delivery per attempt
// and schedules the retries. Each attempt out carries a lease: a process
// killed mid-attempt never settles it, so when the lease expires the durable
// "deliver" reminder (periodic, so it fires again even after a crash during
// its own turn) counts the attempt as failed and the event goes again with
// the same id — at least once, never lost.
import { z } from "zod";
import { isoTime } from "../../core/clock.ts";
import type { WebhooksConfig } from "../../core/config.ts";
import { TroupeError } from "../../core/errors.ts";
import { prefixedId } from "../../core/ids.ts";
import { defineActor, type ActorContext } from "../actor.ts";
import type { WebhookDirectory } from "./directory.ts";
import { maxAttempts, nextDelayMs, parseRetryAfter } from "./schedule.ts";
import {
  attemptResultSchema,
  eventPayloadSchema,
  subscribableEvents,
  toPublicWebhook,
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
  config: WebhooksConfig;
}

const orgInput = z.object({ organization_id: z.string() });
const createInput = orgInput.extend({
  url: z.string(),
  events: z.array(z.enum(subscribableEvents)).min(1),
  secret: z.string(),
});
/** `results`: the dispatcher's reports that waited for this call (recorded first, in the same turn). */
const acceptInput = orgInput.extend({ events: z.array(eventPayloadSchema).min(1), results: z.array(attemptResultSchema).default([]) });
const testInput = orgInput.extend({ event: eventPayloadSchema });
const deliveryInput = orgInput.extend({ delivery_id: z.string() });
const pageInput = orgInput.extend({ limit: z.number().int().min(1).max(100), cursor: z.string().nullable() });

type Ctx = ActorContext<WebhookState>;


function owned(state: WebhookState, organizationId: string): StoredWebhook {
  const webhook = state.webhook;
  if (!webhook || webhook.organization_id !== organizationId) throw new TroupeError("not_found", "webhook not found");
  return webhook;
}

function requireActive(webhook: StoredWebhook): void {
  if (webhook.status !== "active") {
    throw new TroupeError("conflict", `the webhook is ${webhook.status}${webhook.disabled_reason ? ` (${webhook.disabled_reason})` : ""}; only active webhooks deliver`);
  }
}

export function createWebhookActor(deps: WebhookActorDeps) {
  const { config } = deps;
  /** How long an attempt out may take before it counts as failed: the POST's own deadline plus room to report back. */
  const leaseMs = config.timeoutMs + 5000;
  /** The reminder's period: it fires again this long after a firing whose turn never finished (a crash). */
  const periodMs = leaseMs + 1000;

  const addRecord = (state: WebhookState, record: Delivery): void => {
    state.deliveries.unshift(record);
    if (state.deliveries.length > config.maxDeliveries) state.deliveries.length = config.maxDeliveries;
  };

  const remember = (state: WebhookState, event: EventPayload, attempts: number): void => {
    state.recent = [{ event, attempts }, ...state.recent.filter((r) => r.event.id !== event.id)].slice(0, MAX_RECENT_EVENTS);
  };

  const pendingRecord = (event: EventPayload, attempt: number, nowMs: number, dueMs: number): Delivery => ({
    id: prefixedId("dlv", nowMs),
    event_id: event.id,
    event_type: event.type,
    attempt,
    status: "pending",
    response_status: null,
    error: null,
    duration_ms: null,
    created_at: isoTime(nowMs),
    next_attempt_at: isoTime(dueMs),
  });

  /** When the outbox next needs a turn: the earliest retry due, or an attempt's lease running out (plus a second). */
  const nextWakeMs = (state: WebhookState): number | undefined => {
    if (state.outbox.length === 0) return undefined;
    return Math.min(...state.outbox.map((e) => (e.in_flight_until === null ? e.next_attempt_ms : e.in_flight_until + 1000)));
  };

  /** Arms the durable reminder for `dueAtMs` unless it already fires by then. */
  const armReminder = async (ctx: Ctx, dueAtMs: number): Promise<void> => {
    const armed = ctx.state.reminder_due_ms;
    if (armed !== null && armed <= dueAtMs) return;
    await ctx.setReminder(reminderName, Math.max(0, dueAtMs - ctx.clock.now()), periodMs, "pump", { from_reminder: true });
    ctx.state.reminder_due_ms = dueAtMs;
  };

  /** Queues `event` for an attempt now, with its pending delivery record; the caller pumps. */
  const enqueue = async (ctx: Ctx, event: EventPayload, attemptsMade: number): Promise<Delivery> => {
    const now = ctx.clock.now();
    const record = pendingRecord(event, attemptsMade + 1, now, now);
    addRecord(ctx.state, record);
    ctx.state.outbox.push({ event, attempts: attemptsMade, next_attempt_ms: now, delivery_id: record.id, in_flight_until: null });
    // Should the pump never come (a crash right after this turn), the reminder sends it.
    await armReminder(ctx, now + periodMs);
    return record;
  };

  /** Ends every pending delivery (deactivation, 410, schedule exhausted): no further attempts. */
  const cancelAll = async (ctx: Ctx, reason: string): Promise<void> => {
    for (const entry of ctx.state.outbox) {
      const record = ctx.state.deliveries.find((d) => d.id === entry.delivery_id);
      if (record && record.status === "pending") Object.assign(record, { status: "failed", error: reason, next_attempt_at: null });
      remember(ctx.state, entry.event, entry.attempts);
    }
    ctx.state.outbox = [];
    await ctx.clearReminder(reminderName);
    ctx.state.reminder_due_ms = null;
  };

  const setStatus = async (ctx: Ctx, webhook: StoredWebhook, status: "inactive" | "disabled", reason: string | null): Promise<void> => {
    webhook.status = status;
    webhook.disabled_reason = reason;
    await cancelAll(ctx, status === "inactive" ? "cancelled: the webhook was deactivated" : `cancelled: the webhook was disabled (${reason})`);
    await deps.directory.updated(webhook.organization_id, toPublicWebhook(webhook));
  };

  /** Records one attempt's outcome; returns the reason to disable the webhook, if this outcome calls for it. */
  const settleOne = (ctx: Ctx, entry: OutboxEntry, result: AttemptResult): string | undefined => {
    const now = ctx.clock.now();
    entry.attempts += 1;
    entry.in_flight_until = null;
    const record = ctx.state.deliveries.find((d) => d.id === entry.delivery_id);
    const outcome = { response_status: result.status, error: result.error, duration_ms: result.duration_ms };
    const finish = () => {
      ctx.state.outbox = ctx.state.outbox.filter((e) => e !== entry);
      remember(ctx.state, entry.event, entry.attempts);
    };
    if (result.error === null) {
      if (record) Object.assign(record, outcome, { status: "succeeded", next_attempt_at: null });
      finish();
      return undefined;
    }
    if (result.status === 410) {
      if (record) Object.assign(record, outcome, { status: "failed", next_attempt_at: null });
      finish();
      return "the receiver answered 410 Gone";
    }
    const delay = nextDelayMs(entry.attempts, config.retryScale, parseRetryAfter(result.retry_after ?? undefined, now));
    if (delay === undefined) {
      if (record) Object.assign(record, outcome, { status: "failed", next_attempt_at: null });
      finish();
      return `every delivery attempt of event ${entry.event.id} failed (${maxAttempts} attempts over the whole retry schedule)`;
    }
    const dueMs = now + delay;
    if (record) Object.assign(record, outcome, { status: "failed", next_attempt_at: isoTime(dueMs) });
    const next = pendingRecord(entry.event, entry.attempts + 1, now, dueMs);
    addRecord(ctx.state, next);
    entry.delivery_id = next.id;
    entry.next_attempt_ms = dueMs;
    return undefined;
  };

  /** Applies results (from the dispatcher, or expired leases), then disables or re-arms as they call for. */
  const settleAll = async (ctx: Ctx, results: AttemptResult[]): Promise<void> => {
    const webhook = ctx.state.webhook;
    if (!webhook || webhook.status !== "active") return;
    let disableReason: string | undefined;
    for (const result of results) {
      // A result whose attempt is no longer out (its lease expired and it went again, or the webhook was deactivated) is stale.
      const entry = ctx.state.outbox.find((e) => e.delivery_id === result.delivery_id && e.in_flight_until !== null);
      if (entry) disableReason ??= settleOne(ctx, entry, result);
    }
    if (disableReason) {
      await setStatus(ctx, webhook, "disabled", disableReason);
      return;
    }
    const wake = nextWakeMs(ctx.state);
    if (wake !== undefined) await armReminder(ctx, wake);
  };

  /** Hands every due event of an active webhook to the dispatcher, each with a lease; returns how many. */
  const dispatchDue = (ctx: Ctx): number => {
    const webhook = ctx.state.webhook;
    if (webhook?.status !== "active") return 0;
    const now = ctx.clock.now();
    const due = ctx.state.outbox.filter((e) => e.in_flight_until === null && e.next_attempt_ms <= now);
    if (due.length === 0) return 0;
    for (const entry of due) entry.in_flight_until = now + leaseMs;
    deps.dispatch(
      ctx.id,
      due.map((e) => ({ delivery_id: e.delivery_id, url: webhook.url, secret: webhook.secret, event: e.event })),
    );
    return due.length;
  };

  const findEvent = (state: WebhookState, eventId: string) =>
    state.outbox.find((e) => e.event.id === eventId) ?? state.recent.find((r) => r.event.id === eventId);

  return defineActor({
    type: WEBHOOK_ACTOR,
    state: webhookStateSchema,
    initialState: (): WebhookState => ({ webhook: null, outbox: [], deliveries: [], recent: [], reminder_due_ms: null }),
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
            secret: input.secret,
          };
          ctx.state.webhook = webhook;
          await deps.directory.created(input.organization_id, toPublicWebhook(webhook));
          return toPublicWebhook(webhook);
        },
      },

      get: { input: orgInput, run: async (ctx, input): Promise<Webhook> => toPublicWebhook(owned(ctx.state, input.organization_id)) },

      deactivate: {
        input: orgInput,
        run: async (ctx, input): Promise<Webhook> => {
          const webhook = owned(ctx.state, input.organization_id);
          if (webhook.status !== "inactive") await setStatus(ctx, webhook, "inactive", null);
          return toPublicWebhook(webhook);
        },
      },

      /**
       * Persists events for delivery (the publisher's fan-out, batched per
       * webhook) and sends them at once; answers the ids this webhook took.
       */
      accept: {
        input: acceptInput,
        run: async (ctx, input): Promise<{ accepted: string[] }> => {
          await settleAll(ctx, input.results);
          const webhook = ctx.state.webhook;
          if (!webhook || webhook.organization_id !== input.organization_id || webhook.status !== "active") return { accepted: [] };
          const accepted: string[] = [];
          for (const event of input.events) {
            if (!(webhook.events as string[]).includes(event.type)) continue;
            if (findEvent(ctx.state, event.id)) {
              accepted.push(event.id); // a re-publish: already taken
              continue;
            }
            if (ctx.state.outbox.length >= MAX_OUTBOX) {
              const now = ctx.clock.now();
              addRecord(ctx.state, {
                ...pendingRecord(event, 1, now, now),
                status: "failed",
                error: `dropped: ${MAX_OUTBOX} events were already waiting for this webhook`,
                next_attempt_at: null,
              });
              continue;
            }
            await enqueue(ctx, event, 0);
            accepted.push(event.id);
          }
          dispatchDue(ctx);
          return { accepted };
        },
      },

      /** Sends what is due; the reminder calls it (retries, expired leases, crash backstop). */
      pump: {
        input: z.object({ from_reminder: z.boolean().default(false) }),
        run: async (ctx, input): Promise<{ dispatched: number }> => {
          // A fired reminder is re-armed below only if there is still something to wake up for.
          if (input.from_reminder) ctx.state.reminder_due_ms = null;
          const now = ctx.clock.now();
          if (ctx.state.webhook?.status === "active") {
            const expired = ctx.state.outbox.filter((e) => e.in_flight_until !== null && e.in_flight_until <= now);
            const lost = "no result came back for this attempt (the process delivering it stopped, or it overran its lease)";
            await settleAll(
              ctx,
              expired.map((e) => ({ delivery_id: e.delivery_id, status: null, error: lost, retry_after: null, duration_ms: 0 })),
            );
          }
          const dispatched = dispatchDue(ctx);
          const wake = nextWakeMs(ctx.state);
          if (wake !== undefined) await armReminder(ctx, wake);
          else if (input.from_reminder) await ctx.clearReminder(reminderName);
          return { dispatched };
        },
      },

      /** The dispatcher's report: one result per attempt it sent. */
      settle: {
        input: z.object({ results: z.array(attemptResultSchema) }),
        run: async (ctx, input): Promise<{ settled: number }> => {
          await settleAll(ctx, input.results);
          return { settled: input.results.length };
        },
      },

      /** Sends a signed webhook.test event (queued now; the route pumps). */
      test: {
        input: testInput,
        run: async (ctx, input): Promise<Delivery> => {
          requireActive(owned(ctx.state, input.organization_id));
          const record = await enqueue(ctx, input.event, 0);
          dispatchDue(ctx);
          return record;
        },
      },

      /** Sends a delivery's event again now, same event id: a new attempt. */
      retry: {
        input: deliveryInput,
        run: async (ctx, input): Promise<Delivery> => {
          const webhook = owned(ctx.state, input.organization_id);
          const record = ctx.state.deliveries.find((d) => d.id === input.delivery_id);
          if (!record) throw new TroupeError("not_found", "delivery not found");
          requireActive(webhook);
          const now = ctx.clock.now();
          const waiting = ctx.state.outbox.find((e) => e.event.id === record.event_id);
          if (waiting) {
            // Waiting for a retry: it goes now. Already out: its attempt is the answer.
            const pending = ctx.state.deliveries.find((d) => d.id === waiting.delivery_id);
            if (waiting.in_flight_until === null) {
              waiting.next_attempt_ms = now;
              if (pending) pending.next_attempt_at = isoTime(now);
              dispatchDue(ctx);
            }
            return pending ?? record;
          }
          const finished = ctx.state.recent.find((r) => r.event.id === record.event_id);
          if (!finished) throw new TroupeError("conflict", `event ${record.event_id} is no longer kept (the last ${MAX_RECENT_EVENTS} events are)`);
          ctx.state.recent = ctx.state.recent.filter((r) => r !== finished);
          const queued = await enqueue(ctx, finished.event, finished.attempts);
          dispatchDue(ctx);
          return queued;
        },
      },

      delivery: {
        input: deliveryInput,
        run: async (ctx, input): Promise<Delivery> => {
          owned(ctx.state, input.organization_id);
          const record = ctx.state.deliveries.find((d) => d.id === input.delivery_id);
          if (!record) throw new TroupeError("not_found", "delivery not found");
          return record;
        },
      },

      /** Newest first; the cursor is the last record's id (as a store cursor, so the routes check one format). */
      deliveries: {
        input: pageInput,
        run: async (ctx, input): Promise<{ data: Delivery[]; next_cursor: string | null }> => {
          owned(ctx.state, input.organization_id);
          const all = ctx.state.deliveries;
          let start = 0;
          if (input.cursor !== null) {
            const after = all.findIndex((d) => d.id === input.cursor);
            start = after >= 0 ? after + 1 : all.length;
          }
          const data = all.slice(start, start + input.limit);
          const last = data.at(-1);
          return { data, next_cursor: last && start + input.limit < all.length ? last.id : null };
        },
      },
    },
  });
}

export type WebhookActorDefinition = ReturnType<typeof createWebhookActor>;
