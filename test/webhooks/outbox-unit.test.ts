// The outbox state machine (actors/webhooks/outbox.ts) step by step on an
// injected clock: every effect a turn asks for is recorded in order, so each
// test checks the exact records, sends, reminders and status changes — the
// documented retry schedule (docs/api/webhooks.md), Retry-After and its cap,
// leases, the 1,000-event bound and the trims, each boundary one ms either
// side. outbox.test.ts tells the same story end to end; this file pins the
// numbers and the edge cases.
import t from "tap";
import { documentedDelaysMs, hour, minute, second } from "../support/documented-webhook-schedule.ts";
import { MAX_OUTBOX, MAX_RECENT_EVENTS, Outbox, leaseMsOf, pendingRecordOf, reminderPeriodMsOf } from "../../actors/webhooks/outbox.ts";
import type { AttemptResult, Delivery, DispatchedAttempt, EventPayload, OutboxEntry, Webhook, WebhookState } from "../../actors/webhooks/types.ts";

const t0 = Date.parse("2026-11-25T12:00:00Z");
const iso = (ms: number): string => new Date(ms).toISOString();
// timeoutMs 1000: the lease is 6 s and the reminder's period 7 s.
const lease = 6000;
const period = 7000;
const lostAttempt = "no result came back for this attempt (the process delivering it stopped, or it overran its lease)";

type Call =
  | { op: "putRecord"; record: Delivery }
  | { op: "dropRecord"; id: string }
  | { op: "keepEvent"; eventId: string; attempts: number }
  | { op: "dropEvent"; eventId: string }
  | { op: "send"; attempts: DispatchedAttempt[] }
  | { op: "announce"; record: Delivery };

/** One webhook's state and the world around its turns: the clock, the ids made, the secret and every effect asked for. */
class Harness {
  now = t0;
  readonly calls: Call[] = [];
  /** When each delivery id was made (newDeliveryId's argument). */
  readonly idsMadeAt = new Map<string, number>();
  readonly opened: string[] = [];
  secret: string | undefined = "whsec_plain";
  config = { timeoutMs: 1000, retryScale: 1, maxDeliveries: 100 };
  readonly state: WebhookState;
  private n = 0;

  constructor(events: Webhook["events"] = ["job.completed", "job.failed"]) {
    this.state = {
      webhook: { id: "whk_1", organization_id: "org_1", url: "https://hooks.example/in", events, status: "active", disabled_reason: null, created_at: iso(t0), secret: "sealed_1", audience: null },
      outbox: [],
      delivery_ids: [],
      recent_event_ids: [],
      reminder_due_ms: null,
    };
  }

  /** A turn at the clock's time. */
  turn(): Outbox {
    return new Outbox(this.state, {
      now: this.now,
      config: this.config,
      writes: {
        putRecord: (record) => this.calls.push({ op: "putRecord", record }),
        dropRecord: (id) => this.calls.push({ op: "dropRecord", id }),
        keepEvent: (event, attempts) => this.calls.push({ op: "keepEvent", eventId: event.id, attempts }),
        dropEvent: (eventId) => this.calls.push({ op: "dropEvent", eventId }),
        send: (attempts) => this.calls.push({ op: "send", attempts }),
        announce: (record) => this.calls.push({ op: "announce", record }),
      },
      newDeliveryId: (at) => {
        const id = `dlv_${++this.n}`;
        this.idsMadeAt.set(id, at);
        return id;
      },
      openSecret: (sealed) => {
        this.opened.push(sealed);
        return this.secret;
      },
    });
  }

  puts(): Delivery[] {
    return this.calls.flatMap((c) => (c.op === "putRecord" ? [c.record] : []));
  }
  sends(): DispatchedAttempt[][] {
    return this.calls.flatMap((c) => (c.op === "send" ? [c.attempts] : []));
  }
  sent(): DispatchedAttempt[] {
    return this.sends().flat();
  }
  announced(): Delivery[] {
    return this.calls.flatMap((c) => (c.op === "announce" ? [c.record] : []));
  }
  entry(eventId: string): OutboxEntry {
    const found = this.state.outbox.find((e) => e.event.id === eventId);
    if (!found) throw new Error(`${eventId} is not in the outbox`);
    return found;
  }
}

const event = (id: string, type: EventPayload["type"] = "job.completed"): EventPayload => ({ id, type, created_at: iso(t0), data: { n: id } });
const ok = (delivery_id: string, status = 200): AttemptResult => ({ delivery_id, status, error: null, retry_after: null, duration_ms: 12 });
const fail = (delivery_id: string, status: number | null, retry_after: string | null = null): AttemptResult => ({ delivery_id, status, error: `the receiver answered HTTP ${status}`, retry_after, duration_ms: 7 });

/** An entry put straight into the state (a full outbox, an attempt out, a retry waiting). */
function entryOf(id: string, fields: Partial<OutboxEntry> = {}): OutboxEntry {
  return { event: event(id), attempts: 0, next_attempt_ms: t0, delivery_id: `dlv_${id}`, record_created_ms: t0, in_flight_until: null, announce: false, ...fields };
}

/** Accepts one event at the clock's time and answers its delivery id. */
function acceptOne(h: Harness, id: string): string {
  h.turn().accept("org_1", [event(id)]);
  return h.entry(id).delivery_id;
}

t.test("the constants: 1,000 waiting events, 50 finished payloads; the lease is the deadline plus 5 s, the reminder's period a second more", async (t) => {
  t.equal(MAX_OUTBOX, 1000);
  t.equal(MAX_RECENT_EVENTS, 50);
  t.equal(leaseMsOf({ timeoutMs: 1000 }), 6000);
  t.equal(leaseMsOf({ timeoutMs: 0 }), 5000);
  t.equal(reminderPeriodMsOf({ timeoutMs: 1000 }), 7000);
  t.equal(reminderPeriodMsOf({ timeoutMs: 0 }), 6000);
});

t.test("pendingRecordOf rebuilds the whole pending record from its entry", async (t) => {
  const entry = entryOf("evt_1", { attempts: 3, next_attempt_ms: t0 + 9000, record_created_ms: t0 + 1, event: event("evt_1", "job.failed") });
  t.strictSame(pendingRecordOf(entry), {
    id: "dlv_evt_1",
    event_id: "evt_1",
    event_type: "job.failed",
    attempt: 4,
    status: "pending",
    response_status: null,
    error: null,
    duration_ms: null,
    created_at: iso(t0 + 1),
    next_attempt_at: iso(t0 + 9000),
  });
});

t.test("accept queues each subscribed event with a pending record, sends them in one batch with a lease and arms the reminder", async (t) => {
  const h = new Harness(["job.completed", "job.failed"]);
  const box = h.turn();
  t.equal(box.reminder, undefined, "a turn starts asking for nothing");
  t.equal(box.statusChanged, false);
  const taken = box.accept("org_1", [event("evt_1"), event("evt_x", "budget.alert"), event("evt_2", "job.failed")]);
  t.strictSame(taken, ["evt_1", "evt_2"], "the unsubscribed type is not taken");
  t.strictSame(h.state.outbox, [
    { event: event("evt_1"), attempts: 0, next_attempt_ms: t0, delivery_id: "dlv_1", record_created_ms: t0, in_flight_until: t0 + lease, announce: false },
    { event: event("evt_2", "job.failed"), attempts: 0, next_attempt_ms: t0, delivery_id: "dlv_2", record_created_ms: t0, in_flight_until: t0 + lease, announce: false },
  ]);
  t.equal(h.idsMadeAt.get("dlv_1"), t0, "the delivery id is made at the turn's time");
  t.strictSame(h.state.delivery_ids, ["dlv_2", "dlv_1"], "listed newest first");
  t.strictSame(h.calls, [
    {
      op: "send",
      attempts: [
        { delivery_id: "dlv_1", url: "https://hooks.example/in", secret: "whsec_plain", event: event("evt_1") },
        { delivery_id: "dlv_2", url: "https://hooks.example/in", secret: "whsec_plain", event: event("evt_2", "job.failed") },
      ],
    },
  ], "one batch; a pending record is not written (the entry holds it)");
  t.strictSame(h.opened, ["sealed_1"], "the stored secret is opened once for the batch");
  t.strictSame(box.reminder, { arm: t0 + period }, "armed in case the attempts never leave");
  t.equal(h.state.reminder_due_ms, t0 + period);
  t.equal(box.statusChanged, false);
});

t.test("accept takes nothing for a missing webhook, another organization or a webhook that is not active", async (t) => {
  const none = new Harness();
  none.state.webhook = null;
  t.strictSame(none.turn().accept("org_1", [event("evt_1")]), []);
  for (const [org, status] of [["org_2", "active"], ["org_1", "inactive"], ["org_1", "disabled"]] as const) {
    const h = new Harness();
    h.state.webhook!.status = status;
    const box = h.turn();
    t.strictSame(box.accept(org, [event("evt_1")]), [], `${org}, ${status}`);
    t.strictSame(h.state.outbox, []);
    t.strictSame(h.state.delivery_ids, []);
    t.strictSame(h.calls, []);
    t.equal(box.reminder, undefined);
  }
});

t.test("a re-publish of a waiting or recently finished event is taken and not queued again; known() looks in both", async (t) => {
  t.equal(new Harness().turn().known("evt_1"), false, "an empty outbox knows nothing");
  const h = new Harness();
  h.state.recent_event_ids = ["evt_done"];
  acceptOne(h, "evt_1");
  h.now += 1;
  const box = h.turn();
  t.equal(box.known("evt_1"), true, "waiting");
  t.equal(box.known("evt_done"), true, "finished");
  t.equal(box.known("evt_new"), false);
  t.strictSame(box.accept("org_1", [event("evt_1"), event("evt_done")]), ["evt_1", "evt_done"]);
  t.equal(h.state.outbox.length, 1);
  t.equal(h.sent().length, 1, "nothing sent again");
  t.strictSame(h.state.delivery_ids, ["dlv_1"], "no new record");
});

t.test("at most 1,000 events wait: the 1,000th is taken, the next is recorded as a failed delivery and not sent", async (t) => {
  const h = new Harness();
  h.config.maxDeliveries = 5000;
  // 999 attempts out, far from their lease.
  h.state.outbox = Array.from({ length: MAX_OUTBOX - 1 }, (_, i) => entryOf(`evt_w${i}`, { in_flight_until: t0 + hour }));
  t.strictSame(h.turn().accept("org_1", [event("evt_1000")]), ["evt_1000"], "the 1,000th");
  t.equal(h.state.outbox.length, MAX_OUTBOX);
  t.equal(h.sent().length, 1);
  h.now += 1;
  const sendsBefore = h.sends().length;
  const taken = h.turn().accept("org_1", [event("evt_over"), event("evt_w0"), event("evt_over2")]);
  t.strictSame(taken, ["evt_w0"], "a full outbox still takes a re-publish");
  t.equal(h.state.outbox.length, MAX_OUTBOX, "nothing queued");
  t.equal(h.sends().length, sendsBefore, "nothing sent");
  const error = "dropped: 1000 events were already waiting for this webhook";
  t.strictSame(h.puts(), [
    { id: "dlv_2", event_id: "evt_over", event_type: "job.completed", attempt: 1, status: "failed", response_status: null, error, duration_ms: null, created_at: iso(t0 + 1), next_attempt_at: null },
    { id: "dlv_3", event_id: "evt_over2", event_type: "job.completed", attempt: 1, status: "failed", response_status: null, error, duration_ms: null, created_at: iso(t0 + 1), next_attempt_at: null },
  ], "each dropped event's record is written");
  t.strictSame(h.state.delivery_ids, ["dlv_3", "dlv_2", "dlv_1"]);
  t.equal(h.turn().known("evt_over"), false, "a dropped event is not known");
});

t.test("a waiting retry is sent when due, not a millisecond before; an attempt out is not sent again", async (t) => {
  const h = new Harness();
  h.state.outbox = [entryOf("evt_1", { next_attempt_ms: t0 + 5000, attempts: 1 }), entryOf("evt_2", { in_flight_until: t0 + 9000 })];
  h.state.reminder_due_ms = t0 + 5000;
  h.now = t0 + 4999;
  t.equal(h.turn().pump(false), 0);
  t.strictSame(h.calls, []);
  t.strictSame(h.opened, [], "the secret is not opened when nothing is due");
  h.now = t0 + 5000;
  t.equal(h.turn().pump(false), 1);
  t.strictSame(h.sends(), [[{ delivery_id: "dlv_evt_1", url: "https://hooks.example/in", secret: "whsec_plain", event: event("evt_1") }]]);
  t.equal(h.entry("evt_1").in_flight_until, t0 + 5000 + lease);
  t.equal(h.entry("evt_2").in_flight_until, t0 + 9000, "the other one's lease is untouched");
});

t.test("a lease runs out at in_flight_until exactly: the attempt counts as failed with no status and is scheduled 5 s later", async (t) => {
  const h = new Harness();
  const first = acceptOne(h, "evt_1");
  const expiry = t0 + lease;
  h.now = expiry - 1;
  const early = h.turn();
  t.equal(early.pump(true), 0);
  t.equal(h.puts().length, 0, "not yet counted as failed");
  t.equal(h.entry("evt_1").attempts, 0);
  h.now = expiry;
  const box = h.turn();
  t.equal(box.pump(true), 0, "the retry is not due yet");
  t.strictSame(h.puts(), [
    { id: first, event_id: "evt_1", event_type: "job.completed", attempt: 1, status: "failed", response_status: null, error: lostAttempt, duration_ms: 0, created_at: iso(t0), next_attempt_at: iso(expiry + 5000) },
  ]);
  const entry = h.entry("evt_1");
  t.strictSame(entry, { event: event("evt_1"), attempts: 1, next_attempt_ms: expiry + 5000, delivery_id: "dlv_2", record_created_ms: expiry, in_flight_until: null, announce: false });
  t.equal(h.idsMadeAt.get("dlv_2"), expiry);
  t.strictSame(h.state.delivery_ids, ["dlv_2", first]);
  t.strictSame(box.reminder, { arm: expiry + 5000 }, "the reminder wakes for the retry");
  h.now = expiry + 5000;
  const retry = h.turn();
  t.equal(retry.pump(true), 1, "and it goes then");
  t.equal(h.sent().at(-1)!.delivery_id, "dlv_2");
  // Only an attempt out counts as lost: the retry that was waiting is sent, and the reminder wakes for its lease.
  t.strictSame(retry.reminder, { arm: expiry + 5000 + lease + 1000 });
});

t.test("the reminder: a fired one is re-armed for the next wake or cleared; a pump not from the reminder keeps it", async (t) => {
  const empty = new Harness();
  empty.state.reminder_due_ms = t0;
  const fired = empty.turn();
  t.equal(fired.pump(true), 0);
  t.equal(fired.reminder, "clear", "nothing left to wake up for");
  t.equal(empty.state.reminder_due_ms, null);
  const notFired = empty.turn();
  empty.state.reminder_due_ms = t0;
  notFired.pump(false);
  t.equal(notFired.reminder, undefined);
  t.equal(empty.state.reminder_due_ms, t0);

  const h = new Harness();
  h.state.outbox = [entryOf("evt_1", { next_attempt_ms: t0 + 60_000, attempts: 1 })];
  h.state.reminder_due_ms = t0 + 10;
  h.now = t0 + 10;
  const kept = h.turn();
  kept.pump(false);
  t.equal(kept.reminder, undefined, "one armed earlier still fires by then");
  t.equal(h.state.reminder_due_ms, t0 + 10);
  const rearmed = h.turn();
  rearmed.pump(true);
  t.strictSame(rearmed.reminder, { arm: t0 + 60_000 }, "the fired one is armed again for the retry");
  t.equal(h.state.reminder_due_ms, t0 + 60_000);
});

t.test("the next wake is the earliest of each waiting retry and each lease's end plus a second", async (t) => {
  for (const [leaseEnd, retryAt, wake] of [
    [t0 + 100, t0 + 5000, t0 + 1100],
    [t0 + 9000, t0 + 5000, t0 + 5000],
  ] as const) {
    const h = new Harness();
    h.state.outbox = [entryOf("evt_out", { in_flight_until: leaseEnd }), entryOf("evt_wait", { next_attempt_ms: retryAt, attempts: 1 })];
    const box = h.turn();
    box.pump(true);
    t.strictSame(box.reminder, { arm: wake }, `lease to ${leaseEnd - t0}, retry at ${retryAt - t0}`);
  }
});

t.test("the reminder is armed only when it would not fire by then already (one ms either side)", async (t) => {
  for (const [armed, expected] of [
    [null, { arm: t0 + period }],
    [t0 + period + 1, { arm: t0 + period }],
    [t0 + period, undefined],
    [t0 + period - 1, undefined],
  ] as const) {
    const h = new Harness();
    h.state.reminder_due_ms = armed;
    const box = h.turn();
    box.accept("org_1", [event("evt_1")]);
    t.strictSame(box.reminder, expected, `armed at ${armed === null ? "none" : armed - t0}`);
    t.equal(h.state.reminder_due_ms, expected === undefined ? armed : t0 + period);
  }
});

t.test("a result without an error finishes the event as succeeded: its record written, its payload kept, the outbox empty", async (t) => {
  const h = new Harness();
  const id = acceptOne(h, "evt_1");
  h.state.reminder_due_ms = null;
  h.now = t0 + 30;
  h.calls.length = 0;
  const box = h.turn();
  box.settle([ok(id, 204)]);
  t.strictSame(h.calls, [
    { op: "putRecord", record: { id, event_id: "evt_1", event_type: "job.completed", attempt: 1, status: "succeeded", response_status: 204, error: null, duration_ms: 12, created_at: iso(t0), next_attempt_at: null } },
    { op: "keepEvent", eventId: "evt_1", attempts: 1 },
  ]);
  t.strictSame(h.state.outbox, []);
  t.strictSame(h.state.recent_event_ids, ["evt_1"]);
  t.equal(box.reminder, undefined, "nothing to wake up for");
  t.equal(h.state.reminder_due_ms, null);
  t.equal(box.statusChanged, false);
});

t.test("the documented schedule: ten attempts, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h and 24 h apart; the tenth failure disables the webhook", async (t) => {
  const h = new Harness();
  acceptOne(h, "evt_1");
  for (let attempt = 1; attempt <= 10; attempt++) {
    const entry = h.entry("evt_1");
    t.equal(entry.attempts, attempt - 1);
    const id = entry.delivery_id;
    h.now += 50;
    const box = h.turn();
    box.settle([fail(id, 500)]);
    const record = h.puts().at(-1);
    if (attempt < 10) {
      const delay = documentedDelaysMs[attempt - 1]!;
      t.match(record, { id, attempt, status: "failed", response_status: 500, error: "the receiver answered HTTP 500", duration_ms: 7, next_attempt_at: iso(h.now + delay) }, `attempt ${attempt} waits ${delay} ms`);
      const next = h.entry("evt_1");
      t.strictSame(pendingRecordOf(next), { id: next.delivery_id, event_id: "evt_1", event_type: "job.completed", attempt: attempt + 1, status: "pending", response_status: null, error: null, duration_ms: null, created_at: iso(h.now), next_attempt_at: iso(h.now + delay) });
      t.equal(h.state.delivery_ids[0], next.delivery_id, "the pending record is listed");
      t.equal(box.statusChanged, false);
      const due = h.now + delay;
      h.now = due - 1;
      t.equal(h.turn().pump(true), 0, "not a millisecond early");
      h.now = due;
      t.equal(h.turn().pump(true), 1, "sent when due");
    } else {
      t.match(record, { id, attempt: 10, status: "failed", next_attempt_at: null }, "the last attempt has no next");
      t.match(h.state.webhook, { status: "disabled", disabled_reason: "every delivery attempt of event evt_1 failed (10 attempts over the whole retry schedule)" });
      t.ok(box.statusChanged);
      t.equal(box.reminder, "clear");
      t.equal(h.state.reminder_due_ms, null);
      t.strictSame(h.state.outbox, []);
      t.ok(h.calls.some((c) => c.op === "keepEvent" && c.eventId === "evt_1" && c.attempts === 10), "its payload is kept with its ten attempts");
    }
  }
  t.equal(h.sent().length, 10, "ten attempts in all");
});

t.test("WEBHOOK_RETRY_SCALE multiplies the scheduled wait", async (t) => {
  const h = new Harness();
  h.config.retryScale = 0.5;
  const id = acceptOne(h, "evt_1");
  h.turn().settle([fail(id, 500)]);
  t.equal(h.entry("evt_1").next_attempt_ms, t0 + 2500);
});

t.test("a Retry-After longer than the scheduled wait postpones the retry, capped at 24 h; a shorter or unreadable one does not", async (t) => {
  for (const [retryAfter, waitMs] of [
    [null, 5000],
    ["1", 5000],
    ["5", 5000],
    ["6", 6000],
    ["soon", 5000],
    [String(24 * 3600 - 1), 24 * hour - 1000],
    [String(24 * 3600), 24 * hour],
    [String(24 * 3600 + 1), 24 * hour],
    [String(48 * 3600), 24 * hour],
    // A date (whole seconds) is read at the turn's time, t0 + 50 here, not the wall clock's.
    [new Date(t0 + 10 * minute).toUTCString(), 10 * minute - 50],
  ] as const) {
    const h = new Harness();
    const id = acceptOne(h, "evt_1");
    h.now = t0 + 50;
    h.state.reminder_due_ms = null;
    const box = h.turn();
    box.settle([fail(id, 503, retryAfter)]);
    t.equal(h.entry("evt_1").next_attempt_ms, t0 + 50 + waitMs, `Retry-After ${retryAfter}`);
    t.equal(h.puts()[0]!.next_attempt_at, iso(t0 + 50 + waitMs));
    t.strictSame(box.reminder, { arm: t0 + 50 + waitMs });
  }
});

t.test("410 Gone fails the event, disables the webhook and cancels the others, even with results after it in the same batch", async (t) => {
  const h = new Harness();
  h.turn().accept("org_1", [event("evt_1"), event("evt_2"), event("evt_3")]);
  h.now = t0 + 40;
  h.calls.length = 0;
  const box = h.turn();
  box.settle([fail("dlv_1", 410), ok("dlv_2")]);
  const cancelled = "cancelled: the webhook was disabled (the receiver answered 410 Gone)";
  t.strictSame(h.calls, [
    { op: "putRecord", record: { id: "dlv_1", event_id: "evt_1", event_type: "job.completed", attempt: 1, status: "failed", response_status: 410, error: "the receiver answered HTTP 410", duration_ms: 7, created_at: iso(t0), next_attempt_at: null } },
    { op: "keepEvent", eventId: "evt_1", attempts: 1 },
    { op: "putRecord", record: { id: "dlv_2", event_id: "evt_2", event_type: "job.completed", attempt: 1, status: "failed", response_status: null, error: cancelled, duration_ms: null, created_at: iso(t0), next_attempt_at: null } },
    { op: "keepEvent", eventId: "evt_2", attempts: 0 },
    { op: "putRecord", record: { id: "dlv_3", event_id: "evt_3", event_type: "job.completed", attempt: 1, status: "failed", response_status: null, error: cancelled, duration_ms: null, created_at: iso(t0), next_attempt_at: null } },
    { op: "keepEvent", eventId: "evt_3", attempts: 0 },
  ], "the result after the 410 is not applied: its event is cancelled with the rest");
  t.strictSame(h.state.webhook, { ...h.state.webhook!, status: "disabled", disabled_reason: "the receiver answered 410 Gone" });
  t.ok(box.statusChanged);
  t.equal(box.reminder, "clear");
  t.equal(h.state.reminder_due_ms, null);
  t.strictSame(h.state.outbox, []);
  t.strictSame(h.state.recent_event_ids, ["evt_3", "evt_2", "evt_1"]);
});

t.test("settle ignores results it cannot apply: none, unknown or stale ids, a duplicate, a webhook that is not active", async (t) => {
  const h = new Harness();
  const out = acceptOne(h, "evt_1");
  h.state.outbox.push(entryOf("evt_wait", { next_attempt_ms: t0 + hour, attempts: 1 }));
  h.state.reminder_due_ms = null;
  h.calls.length = 0;
  const before = structuredClone(h.state);

  const none = h.turn();
  none.settle([]);
  t.equal(none.reminder, undefined, "no results: not even the reminder");
  t.strictSame(h.state, before);

  h.state.reminder_due_ms = t0;
  const stale = h.turn();
  stale.settle([ok("dlv_unknown"), ok("dlv_evt_wait")]);
  t.strictSame(h.calls, [], "an unknown id, and one whose entry has no attempt out");
  t.strictSame(h.state, { ...before, reminder_due_ms: t0 });

  h.now = t0 + 20;
  h.turn().settle([fail(out, 500), ok(out)]);
  t.equal(h.puts().length, 1, "the second result for the same attempt is stale");
  t.match(h.entry("evt_1"), { attempts: 1, in_flight_until: null, next_attempt_ms: t0 + 20 + 5000 });

  for (const status of ["inactive", "disabled"] as const) {
    const idle = new Harness();
    idle.state.webhook!.status = status;
    idle.state.outbox = [entryOf("evt_1", { in_flight_until: t0 + 10 })];
    const box = idle.turn();
    box.settle([ok("dlv_evt_1")]);
    idle.now = t0 + 10;
    t.equal(idle.turn().pump(true), 0, `${status}: the expired lease is not counted, nothing sent`);
    t.strictSame(idle.calls, [], status);
    t.equal(idle.state.outbox[0]!.in_flight_until, t0 + 10);
  }
  const gone = new Harness();
  gone.state.webhook = null;
  gone.turn().settle([ok("dlv_1")]);
  t.equal(gone.turn().pump(true), 0, "no webhook: nothing to do");
  t.strictSame(gone.calls, []);
});

t.test("a waiting retry gets no send when the webhook is not active", async (t) => {
  const h = new Harness();
  h.state.webhook!.status = "disabled";
  h.state.outbox = [entryOf("evt_1", { next_attempt_ms: t0 })];
  t.equal(h.turn().pump(false), 0);
  t.strictSame(h.calls, []);
  t.strictSame(h.opened, []);
});

t.test("an outcome whose record was trimmed away is not written back; the trim drops the oldest records past maxDeliveries", async (t) => {
  const h = new Harness();
  h.config.maxDeliveries = 2;
  const first = acceptOne(h, "evt_1");
  h.turn().accept("org_1", [event("evt_2")]);
  t.strictSame(h.calls.filter((c) => c.op === "dropRecord"), [], "two fit");
  h.turn().accept("org_1", [event("evt_3")]);
  t.strictSame(h.calls.filter((c) => c.op === "dropRecord"), [{ op: "dropRecord", id: first }], "the third pushes out the oldest");
  t.strictSame(h.state.delivery_ids, ["dlv_3", "dlv_2"]);
  h.calls.length = 0;
  h.now = t0 + 5;
  h.turn().settle([ok(first), ok("dlv_2")]);
  t.strictSame(h.puts().map((r) => r.id), ["dlv_2"], "only the listed one is written");
  t.ok(h.calls.some((c) => c.op === "keepEvent" && c.eventId === "evt_1"), "the trimmed one's event still finishes");
});

t.test("finished payloads: newest first, at most 50, an id never twice", async (t) => {
  const h = new Harness();
  const older = Array.from({ length: MAX_RECENT_EVENTS - 1 }, (_, i) => `evt_r${i}`);
  h.state.recent_event_ids = [...older];
  h.state.outbox = [entryOf("evt_1", { in_flight_until: t0 + 10 }), entryOf("evt_2", { in_flight_until: t0 + 10 })];
  h.turn().settle([ok("dlv_evt_1")]);
  t.strictSame(h.state.recent_event_ids, ["evt_1", ...older], "50: nothing dropped");
  t.strictSame(h.calls.filter((c) => c.op === "dropEvent"), []);
  h.turn().settle([ok("dlv_evt_2")]);
  t.strictSame(h.state.recent_event_ids, ["evt_2", "evt_1", ...older.slice(0, -1)]);
  t.strictSame(h.calls.filter((c) => c.op === "dropEvent"), [{ op: "dropEvent", eventId: older.at(-1) }], "the oldest goes");

  const again = new Harness();
  again.state.recent_event_ids = ["evt_x", "evt_1"];
  again.state.outbox = [entryOf("evt_1", { in_flight_until: t0 + 10, attempts: 2 })];
  again.turn().settle([ok("dlv_evt_1")]);
  t.strictSame(again.state.recent_event_ids, ["evt_1", "evt_x"], "moved to the front, not listed twice");
  t.strictSame(again.calls.filter((c) => c.op === "keepEvent"), [{ op: "keepEvent", eventId: "evt_1", attempts: 3 }]);
});

t.test("a test event is sent now and its outcome announced; when it failed, its retry is not announced", async (t) => {
  const h = new Harness();
  const queued = h.turn().test(event("evt_t", "webhook.test"));
  t.strictSame(queued, { id: "dlv_1", event_id: "evt_t", event_type: "webhook.test", attempt: 1, status: "pending", response_status: null, error: null, duration_ms: null, created_at: iso(t0), next_attempt_at: iso(t0) });
  t.equal(h.entry("evt_t").announce, true);
  t.equal(h.entry("evt_t").in_flight_until, t0 + lease);
  t.equal(h.sent().length, 1);
  t.equal(h.state.reminder_due_ms, t0 + period);
  h.now = t0 + 3;
  h.turn().settle([fail("dlv_1", 500)]);
  t.strictSame(h.announced(), [{ id: "dlv_1", event_id: "evt_t", event_type: "webhook.test", attempt: 1, status: "failed", response_status: 500, error: "the receiver answered HTTP 500", duration_ms: 7, created_at: iso(t0), next_attempt_at: iso(t0 + 3 + 5000) }]);
  t.equal(h.entry("evt_t").announce, false, "nobody waits for the retry");
  h.now = t0 + 3 + 5000;
  h.turn().pump(true);
  h.turn().settle([ok(h.entry("evt_t").delivery_id)]);
  t.equal(h.announced().length, 1);

  const plain = new Harness();
  const id = acceptOne(plain, "evt_1");
  plain.turn().settle([ok(id)]);
  t.strictSame(plain.announced(), [], "an ordinary delivery is not announced");
});

t.test("retryWaiting: a waiting retry goes now and is announced; one already out keeps its attempt and is announced; an unknown event is not waiting", async (t) => {
  const h = new Harness();
  h.state.outbox = [entryOf("evt_wait", { next_attempt_ms: t0 + hour, attempts: 1, record_created_ms: t0 - 10 }), entryOf("evt_out", { in_flight_until: t0 + 3000, next_attempt_ms: t0 - 100 })];
  h.now = t0 + 1;
  t.equal(h.turn().retryWaiting("evt_none"), undefined);
  t.strictSame(h.calls, []);
  const now = h.turn().retryWaiting("evt_wait");
  t.strictSame(now, { id: "dlv_evt_wait", event_id: "evt_wait", event_type: "job.completed", attempt: 2, status: "pending", response_status: null, error: null, duration_ms: null, created_at: iso(t0 - 10), next_attempt_at: iso(t0 + 1) });
  t.match(h.entry("evt_wait"), { announce: true, next_attempt_ms: t0 + 1, in_flight_until: t0 + 1 + lease });
  t.strictSame(h.sent().map((a) => a.delivery_id), ["dlv_evt_wait"]);
  const out = h.turn().retryWaiting("evt_out");
  t.match(out, { id: "dlv_evt_out", attempt: 1, next_attempt_at: iso(t0 - 100) }, "the attempt out is the one announced");
  t.match(h.entry("evt_out"), { announce: true, next_attempt_ms: t0 - 100, in_flight_until: t0 + 3000 });
  t.equal(h.sent().length, 1, "not sent a second time");
  h.turn().settle([ok("dlv_evt_out")]);
  t.match(h.announced(), [{ id: "dlv_evt_out", status: "succeeded" }]);
});

t.test("requeue puts a finished event back: out of the finished list, sent now with its attempts counted on, announced", async (t) => {
  const h = new Harness();
  h.state.recent_event_ids = ["evt_x", "evt_1", "evt_y"];
  h.now = t0 + 9;
  const box = h.turn();
  const record = box.requeue({ event: event("evt_1"), attempts: 4 });
  t.strictSame(record, { id: "dlv_1", event_id: "evt_1", event_type: "job.completed", attempt: 5, status: "pending", response_status: null, error: null, duration_ms: null, created_at: iso(t0 + 9), next_attempt_at: iso(t0 + 9) });
  t.strictSame(h.state.recent_event_ids, ["evt_x", "evt_y"]);
  t.strictSame(h.calls[0], { op: "dropEvent", eventId: "evt_1" });
  t.match(h.entry("evt_1"), { attempts: 4, announce: true, in_flight_until: t0 + 9 + lease });
  t.strictSame(h.sent().map((a) => a.delivery_id), ["dlv_1"]);
  t.strictSame(box.reminder, { arm: t0 + 9 + period });
  h.turn().settle([ok("dlv_1")]);
  t.match(h.announced(), [{ id: "dlv_1", attempt: 5, status: "succeeded" }]);
  t.strictSame(h.state.recent_event_ids, ["evt_1", "evt_x", "evt_y"]);
});

t.test("deactivation makes the webhook inactive and cancels every waiting event; an inactive one is left alone", async (t) => {
  const h = new Harness();
  h.turn().accept("org_1", [event("evt_1")]);
  h.state.outbox.push(entryOf("evt_2", { next_attempt_ms: t0 + hour, attempts: 2, announce: true }));
  h.calls.length = 0;
  h.now = t0 + 2;
  const box = h.turn();
  box.deactivate();
  const cancelled = "cancelled: the webhook was deactivated";
  t.strictSame(h.calls, [
    { op: "putRecord", record: { id: "dlv_1", event_id: "evt_1", event_type: "job.completed", attempt: 1, status: "failed", response_status: null, error: cancelled, duration_ms: null, created_at: iso(t0), next_attempt_at: null } },
    { op: "keepEvent", eventId: "evt_1", attempts: 0 },
    { op: "announce", record: { id: "dlv_evt_2", event_id: "evt_2", event_type: "job.completed", attempt: 3, status: "failed", response_status: null, error: cancelled, duration_ms: null, created_at: iso(t0), next_attempt_at: null } },
    { op: "keepEvent", eventId: "evt_2", attempts: 2 },
  ], "an unlisted record is not written, an awaited one is announced");
  t.match(h.state.webhook, { status: "inactive", disabled_reason: null });
  t.ok(box.statusChanged);
  t.equal(box.reminder, "clear");
  t.equal(h.state.reminder_due_ms, null);
  t.strictSame(h.state.outbox, []);

  h.calls.length = 0;
  const again = h.turn();
  again.deactivate();
  t.equal(again.statusChanged, false, "already inactive");
  t.equal(again.reminder, undefined);
  t.strictSame(h.calls, []);

  const disabled = new Harness();
  disabled.state.webhook!.status = "disabled";
  disabled.state.webhook!.disabled_reason = "the receiver answered 410 Gone";
  const reactivated = disabled.turn();
  reactivated.deactivate();
  t.match(disabled.state.webhook, { status: "inactive", disabled_reason: null }, "a disabled webhook can be deactivated");
  t.ok(reactivated.statusChanged);

  const gone = new Harness();
  gone.state.webhook = null;
  const none = gone.turn();
  none.deactivate();
  t.equal(none.statusChanged, false);
});

t.test("a secret that cannot be opened disables the webhook instead of sending, and cancels what waits", async (t) => {
  const h = new Harness();
  h.secret = undefined;
  const box = h.turn();
  t.strictSame(box.accept("org_1", [event("evt_1")]), ["evt_1"], "taken, then cancelled");
  t.strictSame(h.sends(), []);
  const reason = "its signing secret cannot be opened with the current WEBHOOK_SECRET_KEY (the key was changed); create the webhook again";
  t.match(h.state.webhook, { status: "disabled", disabled_reason: reason });
  t.match(h.puts(), [{ id: "dlv_1", status: "failed", error: `cancelled: the webhook was disabled (${reason})` }]);
  t.ok(box.statusChanged);
  t.equal(box.reminder, "clear");

  const later = new Harness();
  later.state.outbox = [entryOf("evt_1", { next_attempt_ms: t0 + 10 })];
  later.secret = undefined;
  later.now = t0 + 10;
  t.equal(later.turn().pump(true), 0, "a due retry is not sent either");
  t.equal(later.state.webhook!.status, "disabled");
});
