// The WebhookActor's outbox state machine, pure: no host, no store, no clock
// of its own. A turn builds an Outbox over the actor's state with the turn's
// time and a sink for its effects (delivery records and finished events to
// write, attempts to send, records to announce); it changes the state in
// place and says what the turn must still do outside it: arm or clear the
// durable "deliver" reminder, tell the directory the webhook's status
// changed. webhook-actor.ts does those and the store reads (a listed
// record, a finished event's payload); test/webhooks/outbox.test.ts drives
// this module directly with a fake time.
//
// An event is queued with a pending delivery record (derived from its entry,
// never written); a dispatch marks each due entry in flight until a lease
// runs out; a result settles it (succeeded, failed for good, or failed with
// a retry scheduled, which lists a new pending record); a lease that runs
// out counts as a failed attempt, so an event is sent at least once and
// never lost.
import { isoTime } from "../../core/clock.ts";
import type { WebhooksConfig } from "../../core/config.ts";
import { parseRetryAfterMs } from "../../core/retry-after.ts";
import { maxAttempts, nextDelayMs } from "./schedule.ts";
import type { AttemptResult, Delivery, DispatchedAttempt, EventPayload, OutboxEntry, StoredWebhook, WebhookState } from "./types.ts";

/** Events waiting per webhook; past it a new event is recorded as a failed delivery instead (bounded state). */
export const MAX_OUTBOX = 1000;
/** Finished events whose payload is kept (retry by delivery id, idempotent re-publish). */
export const MAX_RECENT_EVENTS = 50;
/** Waiting for an attempt's result this long past the receiver's deadline before counting it as lost. */
const leaseSlackMs = 5000;

/** Where a turn's effects go (delivery-log.ts's TurnWrites applies them once the turn's work is done). */
export interface OutboxWrites {
  putRecord(record: Delivery): void;
  dropRecord(id: string): void;
  keepEvent(event: EventPayload, attempts: number): void;
  dropEvent(eventId: string): void;
  send(attempts: DispatchedAttempt[]): void;
  /** An attempt a caller waits for (test, retry) has its outcome. */
  announce(record: Delivery): void;
}

export interface OutboxEnv {
  now: number;
  config: Pick<WebhooksConfig, "timeoutMs" | "retryScale" | "maxDeliveries">;
  writes: OutboxWrites;
  /** A new delivery id (dlv_…) made at `now`. */
  newDeliveryId(now: number): string;
  /** The webhook's signing secret in the clear; undefined when it cannot be opened (another key sealed it). */
  openSecret(sealed: string): string | undefined;
}

/** How long an attempt out may take before it counts as failed: the POST's own deadline plus room to report back. */
export const leaseMsOf = (config: Pick<WebhooksConfig, "timeoutMs">): number => config.timeoutMs + leaseSlackMs;
/** The reminder's period: it fires again this long after a firing whose turn never finished (a crash). */
export const reminderPeriodMsOf = (config: Pick<WebhooksConfig, "timeoutMs">): number => leaseMsOf(config) + 1000;

/** The pending delivery record of an outbox entry, rebuilt from the entry (it holds every field). */
export function pendingRecordOf(entry: OutboxEntry): Delivery {
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

const lostAttempt = "no result came back for this attempt (the process delivering it stopped, or it overran its lease)";

export class Outbox {
  /** The last reminder change this turn asks for (a later one replaces an earlier one, as setReminder does). */
  reminder: { arm: number } | "clear" | undefined;
  /** The webhook's status changed this turn: the directory must hear of it. */
  statusChanged = false;
  private readonly state: WebhookState;
  private readonly env: OutboxEnv;
  private readonly w: OutboxWrites;

  constructor(state: WebhookState, env: OutboxEnv) {
    this.state = state;
    this.env = env;
    this.w = env.writes;
  }

  /** Queues the events the webhook subscribes to and sends them; answers the ids it took (a re-publish counts as taken). */
  accept(organizationId: string, events: EventPayload[]): string[] {
    const webhook = this.state.webhook;
    const accepted: string[] = [];
    if (!webhook || webhook.organization_id !== organizationId || webhook.status !== "active") return accepted;
    for (const event of events) {
      if (!(webhook.events as string[]).includes(event.type)) continue;
      if (this.known(event.id)) {
        accepted.push(event.id);
        continue;
      }
      if (this.state.outbox.length >= MAX_OUTBOX) {
        const entry = this.entry(event, 0);
        this.addRecord({ ...pendingRecordOf(entry), status: "failed", error: `dropped: ${MAX_OUTBOX} events were already waiting for this webhook`, next_attempt_at: null });
        continue;
      }
      this.enqueue(event, 0, false);
      accepted.push(event.id);
    }
    this.dispatchDue();
    return accepted;
  }

  /** Queues a webhook.test event and sends it now; its outcome is announced. */
  test(event: EventPayload): Delivery {
    const record = this.enqueue(event, 0, true);
    this.dispatchDue();
    return record;
  }

  /**
   * Retry of a delivery whose event is still in the outbox: one waiting for
   * its retry goes now; one already out keeps its attempt. Either way that
   * attempt's outcome is announced. Undefined when the event is not waiting.
   */
  retryWaiting(eventId: string): Delivery | undefined {
    const waiting = this.state.outbox.find((e) => e.event.id === eventId);
    if (!waiting) return undefined;
    waiting.announce = true;
    if (waiting.in_flight_until === null) {
      waiting.next_attempt_ms = this.env.now; // its pending record, derived from the entry, says so
      this.dispatchDue();
    }
    return pendingRecordOf(waiting);
  }

  /** Puts a finished event back in the outbox (retry of a finished delivery): a new attempt now, announced. */
  requeue(finished: { event: EventPayload; attempts: number }): Delivery {
    // Back in the outbox: it is kept again (with its new attempts) when it finishes.
    this.state.recent_event_ids = this.state.recent_event_ids.filter((id) => id !== finished.event.id);
    this.w.dropEvent(finished.event.id);
    const record = this.enqueue(finished.event, finished.attempts, true);
    this.dispatchDue();
    return record;
  }

  /** Whether an event with this id is waiting or recently finished. */
  known(eventId: string): boolean {
    return this.state.outbox.some((e) => e.event.id === eventId) || this.state.recent_event_ids.includes(eventId);
  }

  /** Sends what is due after counting expired leases as failed attempts (the reminder's turn). */
  pump(fromReminder: boolean): number {
    // A fired reminder is re-armed below only if there is still something to wake up for.
    if (fromReminder) this.state.reminder_due_ms = null;
    if (this.state.webhook?.status === "active") {
      const expired = this.state.outbox.filter((e) => e.in_flight_until !== null && e.in_flight_until <= this.env.now);
      this.settle(expired.map((e) => ({ delivery_id: e.delivery_id, status: null, error: lostAttempt, retry_after: null, duration_ms: 0 })));
    }
    const dispatched = this.dispatchDue();
    const wake = this.nextWakeMs();
    if (wake !== undefined) this.armReminder(wake);
    else if (fromReminder) this.reminder = "clear";
    return dispatched;
  }

  /** Applies results (from the dispatcher, or expired leases), then disables or re-arms as they call for. */
  settle(results: AttemptResult[]): void {
    const webhook = this.state.webhook;
    if (!webhook || webhook.status !== "active" || results.length === 0) return;
    // A result whose attempt is no longer out (its lease expired and it went again, or the webhook was deactivated) is stale.
    const out = new Map<string, OutboxEntry>();
    for (const e of this.state.outbox) if (e.in_flight_until !== null) out.set(e.delivery_id, e);
    const done = new Set<OutboxEntry>();
    let disableReason: string | undefined;
    for (const result of results) {
      const entry = out.get(result.delivery_id);
      if (!entry) continue;
      out.delete(result.delivery_id);
      disableReason ??= this.settleOne(entry, result, done);
    }
    if (done.size > 0) this.state.outbox = this.state.outbox.filter((e) => !done.has(e));
    if (disableReason) {
      this.setStatus(webhook, "disabled", disableReason);
      return;
    }
    const wake = this.nextWakeMs();
    if (wake !== undefined) this.armReminder(wake);
  }

  /** Deactivation: status inactive and every pending delivery cancelled. */
  deactivate(): void {
    const webhook = this.state.webhook;
    if (webhook && webhook.status !== "inactive") this.setStatus(webhook, "inactive", null);
  }

  /** Hands every due event of an active webhook to the turn's sends, each with a lease. */
  private dispatchDue(): number {
    const webhook = this.state.webhook;
    if (webhook?.status !== "active") return 0;
    const now = this.env.now;
    const due = this.state.outbox.filter((e) => e.in_flight_until === null && e.next_attempt_ms <= now);
    if (due.length === 0) return 0;
    const secret = this.env.openSecret(webhook.secret);
    if (secret === undefined) {
      // Sealed under another WEBHOOK_SECRET_KEY: no attempt can ever be signed, so the webhook stops (and says why)
      // instead of failing every turn that would send, which would also refuse its events upstream.
      this.setStatus(webhook, "disabled", "its signing secret cannot be opened with the current WEBHOOK_SECRET_KEY (the key was changed); create the webhook again");
      return 0;
    }
    const lease = now + leaseMsOf(this.env.config);
    for (const entry of due) entry.in_flight_until = lease;
    this.w.send(due.map((e) => ({ delivery_id: e.delivery_id, url: webhook.url, secret, event: e.event })));
    return due.length;
  }

  private entry(event: EventPayload, attemptsMade: number): OutboxEntry {
    const now = this.env.now;
    return { event, attempts: attemptsMade, next_attempt_ms: now, delivery_id: this.env.newDeliveryId(now), record_created_ms: now, in_flight_until: null, announce: false };
  }

  /** Queues `event` for an attempt now, with its pending delivery record; the caller dispatches. */
  private enqueue(event: EventPayload, attemptsMade: number, announce: boolean): Delivery {
    const entry = { ...this.entry(event, attemptsMade), announce };
    const record = pendingRecordOf(entry);
    this.addRecord(record);
    this.state.outbox.push(entry);
    // Should the attempt never leave (a crash right after this turn), the reminder sends it.
    this.armReminder(this.env.now + reminderPeriodMsOf(this.env.config));
    return record;
  }

  /** Lists a new record (newest first) and writes it unless pending (derived from the outbox); the oldest past maxDeliveries go. */
  private addRecord(record: Delivery): void {
    const ids = this.state.delivery_ids;
    ids.unshift(record.id);
    if (record.status !== "pending") this.w.putRecord(record);
    for (const dropped of ids.splice(this.env.config.maxDeliveries)) this.w.dropRecord(dropped);
  }

  /** Writes a listed record's outcome (one trimmed away meanwhile stays gone) and announces it if a caller waits for it. */
  private updateRecord(entry: OutboxEntry, record: Delivery): void {
    if (this.state.delivery_ids.includes(record.id)) this.w.putRecord(record);
    if (entry.announce) this.w.announce(record);
  }

  /** Keeps a finished event's payload (newest first); the oldest past MAX_RECENT_EVENTS go. */
  private remember(event: EventPayload, attempts: number): void {
    const ids = [event.id, ...this.state.recent_event_ids.filter((id) => id !== event.id)];
    this.w.keepEvent(event, attempts);
    for (const dropped of ids.splice(MAX_RECENT_EVENTS)) this.w.dropEvent(dropped);
    this.state.recent_event_ids = ids;
  }

  /** When the outbox next needs a turn: the earliest retry due, or an attempt's lease running out (plus a second). */
  private nextWakeMs(): number | undefined {
    if (this.state.outbox.length === 0) return undefined;
    let wake = Infinity;
    for (const e of this.state.outbox) wake = Math.min(wake, e.in_flight_until === null ? e.next_attempt_ms : e.in_flight_until + 1000);
    return wake;
  }

  /** Arms the durable reminder for `dueAtMs` unless it already fires by then. */
  private armReminder(dueAtMs: number): void {
    const armed = this.state.reminder_due_ms;
    if (armed !== null && armed <= dueAtMs) return;
    this.state.reminder_due_ms = dueAtMs;
    this.reminder = { arm: dueAtMs };
  }

  /** Ends every pending delivery (deactivation, 410, schedule exhausted): no further attempts. */
  private cancelAll(reason: string): void {
    for (const entry of this.state.outbox) {
      this.updateRecord(entry, { ...pendingRecordOf(entry), status: "failed", error: reason, next_attempt_at: null });
      this.remember(entry.event, entry.attempts);
    }
    this.state.outbox = [];
    this.state.reminder_due_ms = null;
    this.reminder = "clear";
  }

  private setStatus(webhook: StoredWebhook, status: "inactive" | "disabled", reason: string | null): void {
    webhook.status = status;
    webhook.disabled_reason = reason;
    this.cancelAll(status === "inactive" ? "cancelled: the webhook was deactivated" : `cancelled: the webhook was disabled (${reason})`);
    this.statusChanged = true;
  }

  /** Records one attempt's outcome; returns the reason to disable the webhook, if this outcome calls for it. Finished entries are added to `done`. */
  private settleOne(entry: OutboxEntry, result: AttemptResult, done: Set<OutboxEntry>): string | undefined {
    const now = this.env.now;
    const attempted = pendingRecordOf(entry);
    entry.attempts += 1;
    entry.in_flight_until = null;
    const outcome = { response_status: result.status, error: result.error, duration_ms: result.duration_ms };
    const finish = (status: "succeeded" | "failed") => {
      this.updateRecord(entry, { ...attempted, ...outcome, status, next_attempt_at: null });
      done.add(entry);
      this.remember(entry.event, entry.attempts);
    };
    if (result.error === null) {
      finish("succeeded");
      return undefined;
    }
    if (result.status === 410) {
      finish("failed");
      return "the receiver answered 410 Gone";
    }
    const delay = nextDelayMs(entry.attempts, this.env.config.retryScale, parseRetryAfterMs(result.retry_after ?? undefined, now));
    if (delay === undefined) {
      finish("failed");
      return `every delivery attempt of event ${entry.event.id} failed (${maxAttempts} attempts over the whole retry schedule)`;
    }
    const dueMs = now + delay;
    this.updateRecord(entry, { ...attempted, ...outcome, status: "failed", next_attempt_at: isoTime(dueMs) });
    // The announced attempt has its outcome; the caller that waited for it does not wait for the retry.
    entry.announce = false;
    entry.delivery_id = this.env.newDeliveryId(now);
    entry.record_created_ms = now;
    entry.next_attempt_ms = dueMs;
    this.addRecord(pendingRecordOf(entry));
    return undefined;
  }
}
