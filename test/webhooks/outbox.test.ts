// The outbox state machine without a host, a store or a real clock
// (actors/webhooks/outbox.ts): each step builds an Outbox over one state at
// a fake time, as a WebhookActor turn does, and checks the state it leaves
// and the effects it asks for.
import t from "tap";
import { Outbox, leaseMsOf, type OutboxWrites } from "../../actors/webhooks/outbox.ts";
import { retryAfterCapMs, retryDelaysMs } from "../../actors/webhooks/schedule.ts";
import type { AttemptResult, Delivery, DispatchedAttempt, EventPayload, Webhook, WebhookState } from "../../actors/webhooks/types.ts";

const config = { timeoutMs: 1000, retryScale: 1, maxDeliveries: 100 };
const t0 = Date.parse("2026-11-25T12:00:00Z");

interface Effects {
  records: Map<string, Delivery>;
  dropped: string[];
  kept: string[];
  sent: DispatchedAttempt[];
  announced: Delivery[];
}

function newState(events: Webhook["events"] = ["job.completed"]): WebhookState {
  return {
    webhook: { id: "whk_1", organization_id: "org_1", url: "https://hooks.example/in", events, status: "active", disabled_reason: null, created_at: new Date(t0).toISOString(), secret: "sealed", audience: null },
    outbox: [],
    delivery_ids: [],
    recent_event_ids: [],
    reminder_due_ms: null,
  };
}

/** A turn at `now` over `state`; the effects it asked for land in `fx`. */
function turn(state: WebhookState, now: number, fx: Effects, openSecret: (sealed: string) => string | undefined = () => "whsec_plain"): Outbox {
  let n = 0;
  const writes: OutboxWrites = {
    putRecord: (r) => fx.records.set(r.id, r),
    dropRecord: (id) => fx.dropped.push(id),
    keepEvent: (e) => fx.kept.push(e.id),
    dropEvent: () => undefined,
    send: (a) => fx.sent.push(...a),
    announce: (r) => fx.announced.push(r),
  };
  return new Outbox(state, { now, config, writes, newDeliveryId: (at) => `dlv_${at}_${n++}_${fx.sent.length}_${fx.records.size}`, openSecret });
}

const effects = (): Effects => ({ records: new Map(), dropped: [], kept: [], sent: [], announced: [] });
const event = (id: string, type: EventPayload["type"] = "job.completed"): EventPayload => ({ id, type, created_at: new Date(t0).toISOString(), data: {} });
const ok = (delivery_id: string): AttemptResult => ({ delivery_id, status: 200, error: null, retry_after: null, duration_ms: 12 });
const fail = (delivery_id: string, status: number | null, retry_after: string | null = null): AttemptResult => ({ delivery_id, status, error: `the receiver answered HTTP ${status}`, retry_after, duration_ms: 5 });

t.test("accept queues the subscribed events, sends each once with a lease and arms the reminder; a re-publish is taken, not sent again", async (t) => {
  const state = newState();
  const fx = effects();
  const box = turn(state, t0, fx);
  t.same(box.accept("org_1", [event("evt_a"), event("evt_b", "budget.alert")]), ["evt_a"], "only the subscribed type is taken");
  t.equal(fx.sent.length, 1);
  t.match(fx.sent[0], { url: "https://hooks.example/in", secret: "whsec_plain", event: { id: "evt_a" } });
  t.equal(state.outbox[0]!.in_flight_until, t0 + leaseMsOf(config), "out until its lease runs out");
  t.ok(box.reminder !== undefined && box.reminder !== "clear", "the reminder is armed (a crash before the attempt leaves)");
  t.equal(fx.records.size, 0, "a pending record is not written (the entry holds it)");
  t.same(turn(state, t0 + 1, fx).accept("org_1", [event("evt_a")]), ["evt_a"], "a re-publish is taken");
  t.equal(fx.sent.length, 1, "and not sent again");
  t.same(turn(state, t0 + 1, fx).accept("org_2", [event("evt_c")]), [], "another organization's event is refused");
});

t.test("a success finishes the event: succeeded record, outbox empty, payload kept; no announcement for an ordinary delivery", async (t) => {
  const state = newState();
  const fx = effects();
  turn(state, t0, fx).accept("org_1", [event("evt_a")]);
  turn(state, t0 + 20, fx).settle([ok(fx.sent[0]!.delivery_id)]);
  t.match([...fx.records.values()], [{ event_id: "evt_a", status: "succeeded", attempt: 1, response_status: 200, duration_ms: 12, next_attempt_at: null }]);
  t.same(state.outbox, []);
  t.same(state.recent_event_ids, ["evt_a"]);
  t.same(fx.kept, ["evt_a"]);
  t.same(fx.announced, [], "nobody waits for it");
});

t.test("a failure schedules the next attempt on the schedule; a Retry-After postpones it, capped at 24 h", async (t) => {
  const state = newState();
  const fx = effects();
  turn(state, t0, fx).accept("org_1", [event("evt_a"), event("evt_b")]);
  const [a, b] = fx.sent;
  const now = t0 + 50;
  turn(state, now, fx).settle([fail(a!.delivery_id, 500), fail(b!.delivery_id, 503, String(48 * 3600))]);
  const failedA = fx.records.get(a!.delivery_id)!;
  t.match(failedA, { status: "failed", response_status: 500, attempt: 1, next_attempt_at: new Date(now + retryDelaysMs[0]!).toISOString() });
  t.equal(fx.records.get(b!.delivery_id)!.next_attempt_at, new Date(now + retryAfterCapMs).toISOString(), "48 h asked, 24 h kept");
  t.equal(state.outbox.length, 2, "both wait for their retry");
  t.equal(state.delivery_ids.length, 4, "each with a new pending record listed");
  const retry = turn(state, now + retryDelaysMs[0]!, fx);
  t.equal(retry.pump(true), 1, "the due one goes when the reminder fires");
  t.equal(fx.sent.at(-1)!.event.id, "evt_a");
  t.equal(fx.sent.at(-1)!.delivery_id, state.outbox[0]!.delivery_id, "under its new delivery id");
});

t.test("a Retry-After date postpones the attempt until that date, read at the turn's time", async (t) => {
  const state = newState();
  const fx = effects();
  turn(state, t0, fx).accept("org_1", [event("evt_a")]);
  const [a] = fx.sent;
  // 10 min after t0: later than the 5 s the schedule asks for; t0 is not the wall clock's time, so only the turn's clock reads it right.
  const until = t0 + 10 * 60_000;
  turn(state, t0 + 50, fx).settle([fail(a!.delivery_id, 503, new Date(until).toUTCString())]);
  t.equal(fx.records.get(a!.delivery_id)!.next_attempt_at, new Date(until).toISOString());
  t.equal(state.outbox[0]!.next_attempt_ms, until);
});

t.test("an attempt whose lease ran out counts as failed and goes again, same event", async (t) => {
  const state = newState();
  const fx = effects();
  turn(state, t0, fx).accept("org_1", [event("evt_a")]);
  const first = fx.sent[0]!;
  const expired = t0 + leaseMsOf(config);
  t.equal(turn(state, expired - 1, fx).pump(true), 0, "not before the lease runs out");
  t.equal(fx.records.size, 0, "nor counted as failed");
  turn(state, expired, fx).pump(true);
  t.match(fx.records.get(first.delivery_id), { status: "failed", response_status: null, error: /no result came back/ });
  t.equal(turn(state, expired + retryDelaysMs[0]!, fx).pump(true), 1);
  t.equal(fx.sent.at(-1)!.event.id, "evt_a");
  turn(state, expired + retryDelaysMs[0]! + 1, fx).settle([ok(first.delivery_id)]);
  t.equal(state.outbox.length, 1, "the first attempt's late result is stale: it settles nothing");
});

t.test("410 Gone disables the webhook and cancels every other pending delivery", async (t) => {
  const state = newState();
  const fx = effects();
  turn(state, t0, fx).accept("org_1", [event("evt_a"), event("evt_b")]);
  const box = turn(state, t0 + 5, fx);
  box.settle([fail(fx.sent[0]!.delivery_id, 410)]);
  t.match(state.webhook, { status: "disabled", disabled_reason: "the receiver answered 410 Gone" });
  t.ok(box.statusChanged, "the directory must hear of it");
  t.equal(box.reminder, "clear");
  t.same(state.outbox, []);
  t.match(fx.records.get(fx.sent[1]!.delivery_id), { status: "failed", error: /cancelled: the webhook was disabled/ });
});

t.test("the whole schedule failing disables the webhook", async (t) => {
  const state = newState();
  const fx = effects();
  turn(state, t0, fx).accept("org_1", [event("evt_a")]);
  let now = t0;
  for (let attempt = 1; attempt <= retryDelaysMs.length + 1; attempt++) {
    turn(state, now, fx).settle([fail(state.outbox[0]!.delivery_id, 500)]);
    if (attempt <= retryDelaysMs.length) {
      now += retryDelaysMs[attempt - 1]!;
      turn(state, now, fx).pump(true);
    }
  }
  t.equal(fx.sent.length, retryDelaysMs.length + 1, "ten attempts");
  t.match(state.webhook, { status: "disabled", disabled_reason: /every delivery attempt of event evt_a failed/ });
});

t.test("a secret that cannot be opened disables the webhook instead of sending", async (t) => {
  const state = newState();
  const fx = effects();
  const box = turn(state, t0, fx, () => undefined);
  box.accept("org_1", [event("evt_a")]);
  t.same(fx.sent, []);
  t.match(state.webhook, { status: "disabled", disabled_reason: /WEBHOOK_SECRET_KEY/ });
  t.ok(box.statusChanged);
});

t.test("a test event's outcome is announced once; a failed one's retry is not", async (t) => {
  const state = newState();
  const fx = effects();
  const queued = turn(state, t0, fx).test(event("evt_test", "webhook.test"));
  t.match(queued, { status: "pending", event_type: "webhook.test", attempt: 1 });
  turn(state, t0 + 3, fx).settle([fail(queued.id, 500)]);
  t.match(fx.announced, [{ id: queued.id, status: "failed", response_status: 500 }], "the attempt's own record");
  const due = t0 + 3 + retryDelaysMs[0]!;
  t.equal(turn(state, due, fx).pump(true), 1, "its retry goes on the schedule");
  turn(state, due + 1, fx).settle([ok(state.outbox[0]!.delivery_id)]);
  t.same(state.outbox, [], "and succeeds");
  t.equal(fx.announced.length, 1, "the retry nobody waits for is not announced");
});

t.test("retry: a waiting event goes now and is announced; a finished one is queued again with its attempts", async (t) => {
  const state = newState();
  const fx = effects();
  turn(state, t0, fx).accept("org_1", [event("evt_a")]);
  turn(state, t0 + 1, fx).settle([fail(fx.sent[0]!.delivery_id, 500)]);
  const now = t0 + 2;
  const again = turn(state, now, fx).retryWaiting("evt_a")!;
  t.match(again, { status: "pending", attempt: 2, next_attempt_at: new Date(now).toISOString() }, "due now");
  t.equal(fx.sent.length, 2, "sent now, not on the schedule");
  turn(state, now + 1, fx).settle([ok(again.id)]);
  t.match(fx.announced, [{ id: again.id, status: "succeeded", attempt: 2 }]);
  t.equal(turn(state, now + 2, fx).retryWaiting("evt_a"), undefined, "finished: no longer waiting");
  const queued = turn(state, now + 3, fx).requeue({ event: event("evt_a"), attempts: 2 });
  t.match(queued, { status: "pending", attempt: 3 });
  t.same(state.recent_event_ids, [], "back in the outbox");
  t.equal(fx.sent.at(-1)!.delivery_id, queued.id);
});

t.test("deactivation cancels what waits and clears the reminder", async (t) => {
  const state = newState();
  const fx = effects();
  turn(state, t0, fx).accept("org_1", [event("evt_a")]);
  const box = turn(state, t0 + 1, fx);
  box.deactivate();
  t.match(state.webhook, { status: "inactive", disabled_reason: null });
  t.equal(box.reminder, "clear");
  t.same(state.outbox, []);
  t.match(fx.records.get(fx.sent[0]!.delivery_id), { status: "failed", error: "cancelled: the webhook was deactivated" });
  t.same(turn(state, t0 + 2, fx).accept("org_1", [event("evt_b")]), [], "an inactive webhook takes nothing");
});
