// The delivery log (actors/webhooks/delivery-log.ts) on an in-memory store
// whose every read and batch is recorded (test/support/memory-data-store.ts).
// What it proves:
// - records(webhook, ids) reads the keys `webhook-delivery:<webhook>:<id>`
//   in one getMany, answers in the ids' order (not the store's), undefined
//   where nothing is stored or the document does not parse, and reads
//   nothing at all for no ids;
// - finished(webhook, event) reads `webhook-event:<webhook>:<event>`; a kept
//   event with 0 attempts reads back, -1 or a fraction or a bad payload is
//   undefined;
// - a turn's writes: one batch at finish holding the last op per key in
//   first-write order, then the attempts are dispatched once and the
//   records announced once, each in the order given; a finish with nothing
//   to do touches neither the store nor the callbacks; a second finish
//   writes nothing again; a failed batch dispatches and announces nothing;
// - writes are keyed by their own webhook: another webhook's log reads none.
import t from "tap";
import { DeliveryLog } from "../../actors/webhooks/delivery-log.ts";
import type { Delivery, DispatchedAttempt, EventPayload } from "../../actors/webhooks/types.ts";
import { MemoryDataStore } from "../support/memory-data-store.ts";

const createdAt = "2026-12-04T18:00:00.000Z";

function delivery(id: string, overrides: Partial<Delivery> = {}): Delivery {
  return {
    id,
    event_id: "evt_1",
    event_type: "job.completed",
    attempt: 1,
    status: "succeeded",
    response_status: 200,
    error: null,
    duration_ms: 12,
    created_at: createdAt,
    next_attempt_at: null,
    ...overrides,
  };
}

const event = (id: string): EventPayload => ({ id, type: "webhook.test", created_at: createdAt, data: { webhook_id: "whk_1" } });

const attempt = (deliveryId: string): DispatchedAttempt => ({ delivery_id: deliveryId, url: "https://example.test/hook", secret: "whsec_x", event: event("evt_1") });

/** A log on a fresh store, and what its turns dispatched and announced. */
function setup() {
  const store = new MemoryDataStore();
  const log = new DeliveryLog(store);
  const dispatched: DispatchedAttempt[][] = [];
  const announced: Delivery[][] = [];
  const begin = (webhookId = "whk_1") =>
    log.begin(
      webhookId,
      (attempts) => dispatched.push(attempts),
      (records) => announced.push(records),
    );
  return { store, log, dispatched, announced, begin };
}

t.test("records: one getMany of the ids' keys, answered in the ids' order; missing or unreadable ones undefined", async (t) => {
  const { store, log } = setup();
  store.docs.set("webhook-delivery:whk_1:dlv_a", delivery("dlv_a"));
  store.docs.set("webhook-delivery:whk_1:dlv_b", delivery("dlv_b", { status: "failed", response_status: 500, error: "the receiver answered HTTP 500" }));
  store.docs.set("webhook-delivery:whk_1:dlv_bad", { ...delivery("dlv_bad"), attempt: 0 });
  store.docs.set("webhook-delivery:whk_2:dlv_c", delivery("dlv_c"));
  const records = await log.records("whk_1", ["dlv_b", "dlv_missing", "dlv_a", "dlv_bad", "dlv_c"]);
  t.strictSame(records, [
    delivery("dlv_b", { status: "failed", response_status: 500, error: "the receiver answered HTTP 500" }),
    undefined,
    delivery("dlv_a"),
    undefined,
    undefined,
  ]);
  t.strictSame(store.take(), [
    { call: "getMany", keys: ["webhook-delivery:whk_1:dlv_b", "webhook-delivery:whk_1:dlv_missing", "webhook-delivery:whk_1:dlv_a", "webhook-delivery:whk_1:dlv_bad", "webhook-delivery:whk_1:dlv_c"] },
  ], "one read; another webhook's record is under its own key");
});

t.test("records of no ids: [] without reading the store", async (t) => {
  const { store, log } = setup();
  t.strictSame(await log.records("whk_1", []), []);
  t.strictSame(store.take(), [], "no read");
});

t.test("finished: the kept event and its attempts; 0 attempts read back, -1, 1.5 or a bad payload do not", async (t) => {
  const { store, log } = setup();
  store.docs.set("webhook-event:whk_1:evt_1", { event: event("evt_1"), attempts: 3 });
  store.docs.set("webhook-event:whk_1:evt_0", { event: event("evt_0"), attempts: 0 });
  store.docs.set("webhook-event:whk_1:evt_neg", { event: event("evt_neg"), attempts: -1 });
  store.docs.set("webhook-event:whk_1:evt_frac", { event: event("evt_frac"), attempts: 1.5 });
  store.docs.set("webhook-event:whk_1:evt_bad", { event: { ...event("evt_bad"), type: "job.nope" }, attempts: 1 });
  t.strictSame(await log.finished("whk_1", "evt_1"), { event: event("evt_1"), attempts: 3 });
  t.strictSame(await log.finished("whk_1", "evt_0"), { event: event("evt_0"), attempts: 0 }, "0: at the minimum");
  t.equal(await log.finished("whk_1", "evt_neg"), undefined, "-1: one under it");
  t.equal(await log.finished("whk_1", "evt_frac"), undefined, "not a whole number");
  t.equal(await log.finished("whk_1", "evt_bad"), undefined, "an unknown event type");
  t.equal(await log.finished("whk_1", "evt_missing"), undefined, "nothing kept");
  t.equal(await log.finished("whk_2", "evt_1"), undefined, "another webhook's");
  t.strictSame(
    store.take().map((c) => (c.call === "get" ? c.key : c.call)),
    ["evt_1", "evt_0", "evt_neg", "evt_frac", "evt_bad", "evt_missing"].map((id) => `webhook-event:whk_1:${id}`).concat("webhook-event:whk_2:evt_1"),
    "one get per call, of the event's key",
  );
});

t.test("a turn: one batch of the last op per key, then the attempts dispatched and the records announced", async (t) => {
  const { store, log, dispatched, announced, begin } = setup();
  const turn = begin();
  turn.putRecord(delivery("dlv_a", { status: "pending", response_status: null, duration_ms: null }));
  turn.keepEvent(event("evt_1"), 2);
  turn.putRecord(delivery("dlv_b"));
  turn.dropRecord("dlv_old");
  turn.dropEvent("evt_old");
  turn.putRecord(delivery("dlv_a")); // the same key again: replaces the first put, keeps its place
  turn.keepEvent(event("evt_2"), 1);
  turn.dropEvent("evt_2"); // kept then dropped in one turn: only the delete goes
  turn.send([attempt("dlv_1"), attempt("dlv_2")]);
  turn.send([attempt("dlv_3")]);
  turn.announce(delivery("dlv_a"));
  turn.announce(delivery("dlv_b"));
  t.strictSame(store.take(), [], "nothing written before finish");
  t.strictSame(dispatched, [], "nothing sent before finish");
  t.strictSame(announced, [], "nothing announced before finish");
  await turn.finish();
  t.strictSame(store.take(), [
    {
      call: "apply",
      ops: [
        { op: "put", key: "webhook-delivery:whk_1:dlv_a", value: delivery("dlv_a") },
        { op: "put", key: "webhook-event:whk_1:evt_1", value: { event: event("evt_1"), attempts: 2 } },
        { op: "put", key: "webhook-delivery:whk_1:dlv_b", value: delivery("dlv_b") },
        { op: "delete", key: "webhook-delivery:whk_1:dlv_old" },
        { op: "delete", key: "webhook-event:whk_1:evt_old" },
        { op: "delete", key: "webhook-event:whk_1:evt_2" },
      ],
    },
  ]);
  t.strictSame(dispatched, [[attempt("dlv_1"), attempt("dlv_2"), attempt("dlv_3")]], "one dispatch of every attempt, in order");
  t.strictSame(announced, [[delivery("dlv_a"), delivery("dlv_b")]], "one announcement of both records, in order");
  t.strictSame(await log.records("whk_1", ["dlv_a", "dlv_b"]), [delivery("dlv_a"), delivery("dlv_b")], "the records read back");
  t.strictSame(await log.finished("whk_1", "evt_1"), { event: event("evt_1"), attempts: 2 }, "the kept event reads back");

  await turn.finish();
  t.strictSame(
    store.take().filter((c) => c.call === "apply"),
    [],
    "finishing again writes nothing again",
  );
  t.equal(dispatched.length, 1, "nor sends again");
  t.equal(announced.length, 1, "nor announces again");
});

t.test("a turn with nothing to do touches neither the store nor the callbacks", async (t) => {
  const { store, dispatched, announced, begin } = setup();
  await begin().finish();
  t.strictSame(store.take(), [], "no batch");
  t.strictSame(dispatched, [], "no dispatch");
  t.strictSame(announced, [], "no announcement");
});

t.test("a turn that only sends: no batch, the attempts dispatched, no announcement", async (t) => {
  const { store, dispatched, announced, begin } = setup();
  const turn = begin("whk_9");
  turn.send([attempt("dlv_1")]);
  await turn.finish();
  t.strictSame(store.take(), [], "no batch");
  t.strictSame(dispatched, [[attempt("dlv_1")]]);
  t.strictSame(announced, []);
});

t.test("a turn that only announces: no batch, no dispatch, the record announced", async (t) => {
  const { store, dispatched, announced, begin } = setup();
  const turn = begin();
  turn.announce(delivery("dlv_a"));
  await turn.finish();
  t.strictSame(store.take(), []);
  t.strictSame(dispatched, []);
  t.strictSame(announced, [[delivery("dlv_a")]]);
});

t.test("a turn whose batch fails sends and announces nothing", async (t) => {
  const { store, dispatched, announced, begin } = setup();
  const turn = begin();
  turn.putRecord(delivery("dlv_a"));
  turn.send([attempt("dlv_1")]);
  turn.announce(delivery("dlv_a"));
  store.failNextApply = new Error("store unavailable");
  await t.rejects(turn.finish(), { message: "store unavailable" });
  t.strictSame(dispatched, [], "nothing sent");
  t.strictSame(announced, [], "nothing announced");
  t.equal(store.docs.size, 0, "nothing stored");
});

t.test("begin without an announce callback: announced records go nowhere, the rest as usual", async (t) => {
  const store = new MemoryDataStore();
  const log = new DeliveryLog(store);
  const dispatched: DispatchedAttempt[][] = [];
  const turn = log.begin("whk_1", (attempts) => dispatched.push(attempts));
  turn.putRecord(delivery("dlv_a"));
  turn.announce(delivery("dlv_a"));
  turn.send([attempt("dlv_1")]);
  await turn.finish();
  t.strictSame(dispatched, [[attempt("dlv_1")]]);
  t.strictSame(await log.records("whk_1", ["dlv_a"]), [delivery("dlv_a")]);
});
