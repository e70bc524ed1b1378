// WebhookActor: one per webhook (docs/api/webhooks.md). It holds
// the webhook, an outbox of events still to deliver and the ids of its recent
// delivery records and finished events; the records and those events'
// payloads are documents in the data store (delivery-log.ts), so the state
// each turn reads and writes stays small. The outbox's state machine is
// outbox.ts (pure); this file is its wiring to the host: each writing turn
// builds an Outbox over the state, then arms or clears the durable "deliver"
// reminder it asks for (periodic, so it fires again even after a crash
// during its own turn), tells the directory of a status change, and writes
// the turn's records before its attempts leave (TurnWrites.finish). An event
// is accepted (persisted, idempotent on its id) in one turn; the dispatcher
// sends it outside the turn and reports back through `settle`; an attempt
// whose lease expires counts as failed and the event goes again with the
// same id — at least once, never lost.
import { z } from "zod";
import { isoTime } from "../../core/clock.ts";
import type { WebhooksConfig } from "../../core/config.ts";
import { TroupeError } from "../../core/errors.ts";
import { prefixedId } from "../../core/ids.ts";
import { defineActor, type ActorContext } from "../actor.ts";
import type { DeliveryLog, TurnWrites } from "./delivery-log.ts";
import type { WebhookDirectory } from "./directory.ts";
import { subscribableEvents } from "./events.ts";
import { MAX_RECENT_EVENTS, Outbox, pendingRecordOf, reminderPeriodMsOf } from "./outbox.ts";
import type { SecretBox } from "./secret-box.ts";
import {
  attemptResultSchema,
  eventPayloadSchema,
  toPublicWebhook,
  webhookAudienceSchema,
  webhookStateSchema,
  type Delivery,
  type DispatchedAttempt,
  type OutboxEntry,
  type StoredWebhook,
  type Webhook,
  type WebhookState,
} from "./types.ts";

export { MAX_OUTBOX, MAX_RECENT_EVENTS } from "./outbox.ts";

export const WEBHOOK_ACTOR = "WebhookActor";

const reminderName = "deliver";

export interface WebhookActorDeps {
  /** Sends the attempts outside the turn; their results come back through `settle`. Must not throw. */
  dispatch(webhookId: string, attempts: DispatchedAttempt[]): void;
  /** Announces an attempt a caller waits for (test, retry) once its outcome is written (delivery-events.ts). Must not throw. */
  announce?(webhookId: string, record: Delivery): void;
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

const initialState = (): WebhookState => ({ webhook: null, outbox: [], delivery_ids: [], recent_event_ids: [], reminder_due_ms: null });

export function createWebhookActor(deps: WebhookActorDeps) {
  const { config, log } = deps;
  const periodMs = reminderPeriodMsOf(config);

  const openSecret = (sealed: string): string | undefined => {
    try {
      return deps.secrets.open(sealed);
    } catch {
      return undefined;
    }
  };

  /** Every writing turn starts here; it also seals a secret stored in the clear before encryption existed (committed with the turn). */
  const begin = (ctx: Ctx): { outbox: Outbox; w: TurnWrites } => {
    const webhook = ctx.state.webhook;
    if (webhook && !deps.secrets.isSealed(webhook.secret)) webhook.secret = deps.secrets.seal(webhook.secret);
    const w = log.begin(
      ctx.id,
      (attempts) => deps.dispatch(ctx.id, attempts),
      // Announced only once the turn's state is committed: a failed turn announces no outcome.
      (records) =>
        ctx.afterCommit(() => {
          for (const record of records) deps.announce?.(ctx.id, record);
        }),
    );
    const outbox = new Outbox(ctx.state, { now: ctx.clock.now(), config, writes: w, newDeliveryId: (now) => prefixedId("dlv", now), openSecret });
    return { outbox, w };
  };

  /** What the outbox asked of the turn: the reminder, the directory; then the records are written and the attempts leave. */
  const finish = async (ctx: Ctx, { outbox, w }: { outbox: Outbox; w: TurnWrites }): Promise<void> => {
    const reminder = outbox.reminder;
    if (reminder === "clear") await ctx.clearReminder(reminderName);
    else if (reminder) await ctx.setReminder(reminderName, Math.max(0, reminder.arm - ctx.clock.now()), periodMs, "pump", { from_reminder: true });
    const webhook = ctx.state.webhook;
    if (outbox.statusChanged && webhook) await deps.directory.updated(webhook.organization_id, toPublicWebhook(webhook), webhook.audience);
    await w.finish();
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

  /** A listed delivery record of this webhook, else 404. */
  const listedRecord = async (ctx: Ctx, deliveryId: string): Promise<Delivery> => {
    const record = ctx.state.delivery_ids.includes(deliveryId) ? (await readRecords(ctx, [deliveryId]))[0] : undefined;
    if (!record) throw new TroupeError("not_found", "delivery not found");
    return record;
  };

  return defineActor({
    type: WEBHOOK_ACTOR,
    state: webhookStateSchema,
    initialState,
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
          const turn = begin(ctx);
          turn.outbox.deactivate();
          await finish(ctx, turn);
          return toPublicWebhook(webhook);
        },
      },

      /**
       * Deleting its organization (organization-erasure.ts): stops deliveries
       * (pending ones cancelled), deletes its delivery records and kept event
       * payloads and its reminder, and leaves the initial state, which both
       * hosts delete from their store (daprd only from inside a turn).
       */
      erase: {
        input: orgInput,
        run: async (ctx, input): Promise<{ erased: true }> => {
          owned(ctx.state, input);
          const turn = begin(ctx);
          turn.outbox.deactivate();
          for (const id of ctx.state.delivery_ids) turn.w.dropRecord(id);
          for (const id of ctx.state.recent_event_ids) turn.w.dropEvent(id);
          ctx.state.delivery_ids = [];
          ctx.state.recent_event_ids = [];
          await finish(ctx, turn);
          await ctx.clearReminder(reminderName);
          ctx.state = initialState();
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
          const turn = begin(ctx);
          turn.outbox.settle(input.results);
          const accepted = turn.outbox.accept(input.organization_id, input.events);
          await finish(ctx, turn);
          return { accepted };
        },
      },

      /** Sends what is due; the reminder calls it (retries, expired leases, crash backstop). */
      pump: {
        input: z.object({ from_reminder: z.boolean().default(false) }),
        run: async (ctx, input): Promise<{ dispatched: number }> => {
          const turn = begin(ctx);
          const dispatched = turn.outbox.pump(input.from_reminder);
          await finish(ctx, turn);
          return { dispatched };
        },
      },

      /** The dispatcher's report: one result per attempt it sent. */
      settle: {
        input: z.object({ results: z.array(attemptResultSchema) }),
        run: async (ctx, input): Promise<{ settled: number }> => {
          const turn = begin(ctx);
          turn.outbox.settle(input.results);
          await finish(ctx, turn);
          return { settled: input.results.length };
        },
      },

      /** Sends a signed webhook.test event now; its outcome is announced (the route waits for it). */
      test: {
        input: testInput,
        run: async (ctx, input): Promise<Delivery> => {
          requireActive(owned(ctx.state, input));
          const turn = begin(ctx);
          const record = turn.outbox.test(input.event);
          await finish(ctx, turn);
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
          const turn = begin(ctx);
          const waiting = turn.outbox.retryWaiting(record.event_id);
          if (waiting) {
            await finish(ctx, turn);
            // Its pending record, unless trimmed from the list meanwhile.
            return ctx.state.delivery_ids.includes(waiting.id) ? waiting : record;
          }
          const finished = ctx.state.recent_event_ids.includes(record.event_id) ? await log.finished(ctx.id, record.event_id) : undefined;
          if (!finished) throw new TroupeError("conflict", `event ${record.event_id} is no longer kept (the last ${MAX_RECENT_EVENTS} events are)`);
          const queued = turn.outbox.requeue(finished);
          await finish(ctx, turn);
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
