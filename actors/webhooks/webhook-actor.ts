// WebhookActor: one per webhook (DESIGN.md §3 Events, §4 Webhooks). It holds
// the webhook, an outbox of events still to deliver, the recent delivery
// records and the payloads of recently finished events. An event is accepted
// (persisted, idempotent on its id) in one turn; a `pump` turn then sends
// every due event in parallel, signs each attempt, records one delivery per
// attempt and schedules the retries. The HTTP exchange runs inside the pump
// turn on purpose: what a turn did is committed only when it ends, so a
// process killed mid-delivery leaves the event in the outbox and the durable
// "deliver" reminder (periodic, so it fires again after a crash) sends it
// again with the same event id — at least once, never lost. The cost is that
// an accept waits for a running pump (at most WEBHOOK_TIMEOUT_MS).
import { z } from "zod";
import { isoTime } from "../../core/clock.ts";
import type { WebhooksConfig } from "../../core/config.ts";
import { TroupeError } from "../../core/errors.ts";
import { prefixedId } from "../../core/ids.ts";
import type { PostAnswer } from "../../media/outbound-fetch.ts";
import { defineActor, type ActorContext } from "../actor.ts";
import type { WebhookDirectory } from "./directory.ts";
import { maxAttempts, nextDelayMs, parseRetryAfter } from "./schedule.ts";
import { signedHeaders } from "./signing.ts";
import {
  eventPayloadSchema,
  subscribableEvents,
  toPublicWebhook,
  webhookStateSchema,
  type Delivery,
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
export const MAX_RECENT_EVENTS = 200;
const reminderName = "deliver";

export interface WebhookActorDeps {
  /** One POST within the outbound policy; rejects when no answer came. */
  post(url: string, body: string, headers: Record<string, string>, timeoutMs: number): Promise<PostAnswer>;
  directory: WebhookDirectory;
  config: WebhooksConfig;
}

const orgInput = z.object({ organization_id: z.string() });
const createInput = orgInput.extend({
  url: z.string(),
  events: z.array(z.enum(subscribableEvents)).min(1),
  secret: z.string(),
});
const acceptInput = orgInput.extend({ event: eventPayloadSchema });
const deliveryInput = orgInput.extend({ delivery_id: z.string() });
const pageInput = orgInput.extend({ limit: z.number().int().min(1).max(100), cursor: z.string().nullable() });

type Ctx = ActorContext<WebhookState>;

interface AttemptResult {
  entry: OutboxEntry;
  status: number | null;
  error: string | null;
  retryAfter: string | undefined;
  durationMs: number;
}

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
  /** The reminder's period: it fires again this long after a firing whose turn never finished (a crash). */
  const backstopMs = config.timeoutMs + 1000;

  const addRecord = (state: WebhookState, record: Delivery): void => {
    state.deliveries.unshift(record);
    if (state.deliveries.length > config.maxDeliveries) state.deliveries.length = config.maxDeliveries;
  };

  const remember = (state: WebhookState, event: EventPayload, attempts: number): void => {
    state.recent = [{ event, attempts }, ...state.recent.filter((r) => r.event.id !== event.id)].slice(0, MAX_RECENT_EVENTS);
  };

  /** Queues `event` for an attempt now, with its pending delivery record. */
  const enqueue = async (ctx: Ctx, event: EventPayload, attemptsMade: number): Promise<Delivery> => {
    const now = ctx.clock.now();
    const record: Delivery = {
      id: prefixedId("dlv", now),
      event_id: event.id,
      event_type: event.type,
      attempt: attemptsMade + 1,
      status: "pending",
      response_status: null,
      error: null,
      duration_ms: null,
      created_at: isoTime(now),
      next_attempt_at: isoTime(now),
    };
    addRecord(ctx.state, record);
    ctx.state.outbox.push({ event, attempts: attemptsMade, next_attempt_ms: now, delivery_id: record.id });
    await armBackstop(ctx, now + backstopMs);
    return record;
  };

  /** Makes sure the durable reminder fires by `dueAtMs` (callers then pump at once; this is for crashes). */
  const armBackstop = async (ctx: Ctx, dueAtMs: number): Promise<void> => {
    const armed = ctx.state.reminder_due_ms;
    if (armed !== null && armed <= dueAtMs) return;
    await ctx.setReminder(reminderName, Math.max(0, dueAtMs - ctx.clock.now()), backstopMs, "pump", { from_reminder: true });
    ctx.state.reminder_due_ms = dueAtMs;
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

  const attempt = async (ctx: Ctx, webhook: StoredWebhook, entry: OutboxEntry): Promise<AttemptResult> => {
    const body = JSON.stringify(entry.event);
    const headers = signedHeaders(webhook.secret, entry.event.id, body, ctx.clock.now());
    const started = performance.now();
    try {
      const answer = await deps.post(webhook.url, body, headers, config.timeoutMs);
      const ok = answer.status >= 200 && answer.status < 300;
      return {
        entry,
        status: answer.status,
        error: ok ? null : `the receiver answered HTTP ${answer.status}`,
        retryAfter: answer.retryAfter,
        durationMs: Math.round(performance.now() - started),
      };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return { entry, status: null, error: message, retryAfter: undefined, durationMs: Math.round(performance.now() - started) };
    }
  };

  /** Records one attempt's outcome; returns the reason to disable the webhook, if this outcome calls for it. */
  const settle = (ctx: Ctx, result: AttemptResult): string | undefined => {
    const { entry } = result;
    const now = ctx.clock.now();
    entry.attempts += 1;
    const record = ctx.state.deliveries.find((d) => d.id === entry.delivery_id);
    const outcome = { response_status: result.status, error: result.error, duration_ms: result.durationMs };
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
    const delay = nextDelayMs(entry.attempts, config.retryScale, parseRetryAfter(result.retryAfter, now));
    if (delay === undefined) {
      if (record) Object.assign(record, outcome, { status: "failed", next_attempt_at: null });
      finish();
      return `every delivery attempt of event ${entry.event.id} failed (${maxAttempts} attempts over the whole retry schedule)`;
    }
    const dueMs = now + delay;
    if (record) Object.assign(record, outcome, { status: "failed", next_attempt_at: isoTime(dueMs) });
    const next: Delivery = {
      id: prefixedId("dlv", now),
      event_id: entry.event.id,
      event_type: entry.event.type,
      attempt: entry.attempts + 1,
      status: "pending",
      response_status: null,
      error: null,
      duration_ms: null,
      created_at: isoTime(now),
      next_attempt_at: isoTime(dueMs),
    };
    addRecord(ctx.state, next);
    entry.delivery_id = next.id;
    entry.next_attempt_ms = dueMs;
    return undefined;
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

      /** Persists an event for delivery (the publisher's fan-out); false when this webhook does not take it. */
      accept: {
        input: acceptInput,
        run: async (ctx, input): Promise<{ accepted: boolean }> => {
          const webhook = ctx.state.webhook;
          if (!webhook || webhook.organization_id !== input.organization_id || webhook.status !== "active") return { accepted: false };
          if (!(webhook.events as string[]).includes(input.event.type)) return { accepted: false };
          if (findEvent(ctx.state, input.event.id)) return { accepted: true };
          if (ctx.state.outbox.length >= MAX_OUTBOX) {
            const now = isoTime(ctx.clock.now());
            addRecord(ctx.state, {
              id: prefixedId("dlv"),
              event_id: input.event.id,
              event_type: input.event.type,
              attempt: 1,
              status: "failed",
              response_status: null,
              error: `dropped: ${MAX_OUTBOX} events were already waiting for this webhook`,
              duration_ms: null,
              created_at: now,
              next_attempt_at: null,
            });
            return { accepted: false };
          }
          await enqueue(ctx, input.event, 0);
          return { accepted: true };
        },
      },

      /** Sends every due event; the reminder (crash backstop, retries) and the publisher (at once) call it. */
      pump: {
        input: z.object({ from_reminder: z.boolean().default(false) }),
        run: async (ctx, input): Promise<{ attempted: number }> => {
          if (input.from_reminder) ctx.state.reminder_due_ms = null; // it fired; a periodic one re-arms itself, re-set below
          const webhook = ctx.state.webhook;
          if (!webhook || webhook.status !== "active" || ctx.state.outbox.length === 0) {
            if (input.from_reminder) await ctx.clearReminder(reminderName);
            return { attempted: 0 };
          }
          const now = ctx.clock.now();
          const due = ctx.state.outbox.filter((e) => e.next_attempt_ms <= now);
          const results = await Promise.all(due.map((entry) => attempt(ctx, webhook, entry)));
          let disableReason: string | undefined;
          for (const result of results) disableReason ??= settle(ctx, result);
          if (disableReason) await setStatus(ctx, webhook, "disabled", disableReason);
          else if (ctx.state.outbox.length > 0) {
            // The next attempt is due at the earliest retry; re-arm for it (after a firing, or when it moved earlier).
            const earliest = Math.min(...ctx.state.outbox.map((e) => e.next_attempt_ms));
            if (input.from_reminder || ctx.state.reminder_due_ms === null || ctx.state.reminder_due_ms > earliest) {
              await ctx.setReminder(reminderName, Math.max(0, earliest - ctx.clock.now()), backstopMs, "pump", { from_reminder: true });
              ctx.state.reminder_due_ms = earliest;
            }
          }
          return { attempted: due.length };
        },
      },

      /** Sends a signed webhook.test event (queued now; the route pumps). */
      test: {
        input: acceptInput,
        run: async (ctx, input): Promise<Delivery> => {
          requireActive(owned(ctx.state, input.organization_id));
          return enqueue(ctx, input.event, 0);
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
            waiting.next_attempt_ms = now;
            const pending = ctx.state.deliveries.find((d) => d.id === waiting.delivery_id);
            if (pending) pending.next_attempt_at = isoTime(now);
            return pending ?? record;
          }
          const finished = ctx.state.recent.find((r) => r.event.id === record.event_id);
          if (!finished) throw new TroupeError("conflict", `event ${record.event_id} is no longer kept (the last ${MAX_RECENT_EVENTS} events are)`);
          ctx.state.recent = ctx.state.recent.filter((r) => r !== finished);
          return enqueue(ctx, finished.event, finished.attempts);
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
