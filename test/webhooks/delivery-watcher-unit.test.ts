// The delivery watcher (actors/webhooks/delivery-events.ts): how the test
// and retry routes hear the outcome of the attempt they started. In process,
// on a bus the test drives by hand (or the in-memory store's channel), with
// Node's mock setTimeout as the clock of the wait. What it proves:
// - announce publishes exactly {webhook_id, delivery};
// - the bus is asked to parse announcements only while a watch is open
//   (none, one, two, after both closed);
// - outcome(id): an outcome heard before the question answers at once; one
//   heard while waiting answers then; none answers undefined at the timeout,
//   not one ms before; another delivery's outcome does not answer the wait
//   but is kept for its own question; an answered wait leaves no timer
//   behind (real timers: the process's active Timeouts);
// - every watch of the webhook hears its announcements, closing one leaves
//   the others hearing, and another webhook's announcements reach none;
// - startDeliveryWatcher subscribes on the store's "webhook-deliveries"
//   channel, so one replica's announcement reaches another's watch.
import { mock } from "node:test";
import t, { type Test } from "tap";
import type { EventBus } from "../../actors/event-bus.ts";
import { DeliveryWatcher, startDeliveryWatcher, type DeliveryAnnouncement } from "../../actors/webhooks/delivery-events.ts";
import type { Delivery } from "../../actors/webhooks/types.ts";
import { MemoryDataStore } from "../support/memory-data-store.ts";

function delivery(id: string, overrides: Partial<Delivery> = {}): Delivery {
  return {
    id,
    event_id: "evt_1",
    event_type: "webhook.test",
    attempt: 1,
    status: "succeeded",
    response_status: 204,
    error: null,
    duration_ms: 40,
    created_at: "2026-12-04T18:00:00.000Z",
    next_attempt_at: null,
    ...overrides,
  };
}

/** A bus the test drives: what was published, and the subscriber's handler and `wanted`. */
class HandBus implements EventBus<DeliveryAnnouncement> {
  readonly published: DeliveryAnnouncement[] = [];
  onEvent: ((event: DeliveryAnnouncement, json: string) => void) | undefined;
  wanted: (() => boolean) | undefined;
  subscriptions = 0;

  publish(event: DeliveryAnnouncement): void {
    this.published.push(event);
  }

  async subscribe(onEvent: (event: DeliveryAnnouncement, json: string) => void, wanted?: () => boolean): Promise<void> {
    this.subscriptions += 1;
    this.onEvent = onEvent;
    this.wanted = wanted;
  }

  /** An announcement arriving from the channel, as the bus hands it on when wanted. */
  hear(webhookId: string, record: Delivery): void {
    const event = { webhook_id: webhookId, delivery: record };
    if (!this.onEvent) throw new Error("not subscribed");
    this.onEvent(event, JSON.stringify(event));
  }

  isWanted(): boolean {
    if (!this.wanted) throw new Error("no wanted() given");
    return this.wanted();
  }
}

async function started(): Promise<{ bus: HandBus; watcher: DeliveryWatcher }> {
  const bus = new HandBus();
  const watcher = new DeliveryWatcher(bus);
  await watcher.start();
  return { bus, watcher };
}

/** Watches a promise: `settled` and `value` once it resolved. */
function observe<T>(promise: Promise<T>): { settled: boolean; value: T | undefined } {
  const seen: { settled: boolean; value: T | undefined } = { settled: false, value: undefined };
  void promise.then((value) => {
    seen.settled = true;
    seen.value = value;
  });
  return seen;
}

/** Lets resolved promises' callbacks run (setImmediate is not mocked). */
const flush = () => new Promise((resolve) => setImmediate(resolve));

function mockTimeouts(t: Test): void {
  mock.timers.enable({ apis: ["setTimeout"] });
  t.teardown(() => mock.timers.reset());
}

t.test("announce publishes the webhook id and the record", async (t) => {
  const { bus, watcher } = await started();
  t.equal(bus.subscriptions, 1, "start subscribes once");
  watcher.announce("whk_1", delivery("dlv_1"));
  t.strictSame(bus.published, [{ webhook_id: "whk_1", delivery: delivery("dlv_1") }]);
});

t.test("announcements are wanted only while a watch is open", async (t) => {
  const { bus, watcher } = await started();
  t.equal(bus.isWanted(), false, "no watch");
  const a = watcher.watch("whk_1");
  t.equal(bus.isWanted(), true, "one watch");
  const b = watcher.watch("whk_2");
  a.close();
  t.equal(bus.isWanted(), true, "the other webhook's watch still open");
  b.close();
  t.equal(bus.isWanted(), false, "both closed");
  const c = watcher.watch("whk_1");
  const d = watcher.watch("whk_1");
  c.close();
  t.equal(bus.isWanted(), true, "one of the webhook's two watches still open");
  d.close();
  t.equal(bus.isWanted(), false, "both of the webhook's watches closed");
});

t.test("an outcome heard before the question answers at once", async (t) => {
  mockTimeouts(t);
  const { bus, watcher } = await started();
  const watch = watcher.watch("whk_1");
  bus.hear("whk_1", delivery("dlv_1"));
  const seen = observe(watch.outcome("dlv_1", 1000));
  await flush();
  t.equal(seen.settled, true, "without the clock moving");
  t.strictSame(seen.value, delivery("dlv_1"));
  watch.close();
});

t.test("an outcome heard while waiting answers then; the timeout passing later changes nothing", async (t) => {
  mockTimeouts(t);
  const { bus, watcher } = await started();
  const watch = watcher.watch("whk_1");
  const seen = observe(watch.outcome("dlv_1", 1000));
  mock.timers.tick(500);
  await flush();
  t.equal(seen.settled, false, "still waiting at 500 ms");
  bus.hear("whk_1", delivery("dlv_1", { status: "failed", response_status: 500, error: "the receiver answered HTTP 500" }));
  await flush();
  t.strictSame(seen.value, delivery("dlv_1", { status: "failed", response_status: 500, error: "the receiver answered HTTP 500" }), "the announced record");
  mock.timers.tick(1000);
  await flush();
  t.strictSame(seen.value, delivery("dlv_1", { status: "failed", response_status: 500, error: "the receiver answered HTTP 500" }), "still that record");
  watch.close();
});

t.test("an answered wait leaves no timer running", async (t) => {
  const timeouts = () => process.getActiveResourcesInfo().filter((kind) => kind === "Timeout").length;
  const { bus, watcher } = await started();
  const watch = watcher.watch("whk_1");
  const before = timeouts();
  const answer = watch.outcome("dlv_1", 60_000);
  t.equal(timeouts(), before + 1, "waiting: one timer");
  bus.hear("whk_1", delivery("dlv_1"));
  t.strictSame(await answer, delivery("dlv_1"));
  t.equal(timeouts(), before, "answered: the timer is cleared");
  watch.close();
});

t.test("no outcome: undefined at the timeout, not one ms before", async (t) => {
  mockTimeouts(t);
  const { watcher } = await started();
  const watch = watcher.watch("whk_1");
  const seen = observe(watch.outcome("dlv_1", 1000));
  mock.timers.tick(999);
  await flush();
  t.equal(seen.settled, false, "999 ms: still waiting");
  mock.timers.tick(1);
  await flush();
  t.equal(seen.settled, true, "1000 ms: answered");
  t.equal(seen.value, undefined, "with nothing");
  watch.close();
});

t.test("another delivery's outcome does not answer the wait, and is kept for its own question", async (t) => {
  mockTimeouts(t);
  const { bus, watcher } = await started();
  const watch = watcher.watch("whk_1");
  const seen = observe(watch.outcome("dlv_1", 1000));
  bus.hear("whk_1", delivery("dlv_2"));
  await flush();
  t.equal(seen.settled, false, "dlv_1 still waited for");
  mock.timers.tick(1000);
  await flush();
  t.same(seen, { settled: true, value: undefined }, "dlv_1 timed out");
  const other = observe(watch.outcome("dlv_2", 1000));
  await flush();
  t.strictSame(other, { settled: true, value: delivery("dlv_2") }, "dlv_2 answered at once");
  watch.close();
});

t.test("every watch of the webhook hears; closing one leaves the other hearing; other webhooks' outcomes reach none", async (t) => {
  mockTimeouts(t);
  const { bus, watcher } = await started();
  const first = watcher.watch("whk_1");
  const second = watcher.watch("whk_1");
  const elsewhere = watcher.watch("whk_2");
  bus.hear("whk_1", delivery("dlv_1"));
  t.strictSame([await first.outcome("dlv_1", 1000), await second.outcome("dlv_1", 1000)], [delivery("dlv_1"), delivery("dlv_1")], "both watches heard it");
  first.close();
  bus.hear("whk_1", delivery("dlv_2"));
  t.strictSame(await second.outcome("dlv_2", 1000), delivery("dlv_2"), "the open watch still hears");
  const firstWaits = observe(first.outcome("dlv_2", 1000));
  bus.hear("whk_3", delivery("dlv_3")); // no watch on whk_3: nobody hears it, nothing throws
  const elsewhereWaits = observe(elsewhere.outcome("dlv_2", 1000));
  const wrongWebhook = observe(second.outcome("dlv_3", 1000));
  mock.timers.tick(1000);
  await flush();
  t.strictSame(firstWaits, { settled: true, value: undefined }, "the closed watch heard nothing after closing");
  t.strictSame(elsewhereWaits, { settled: true, value: undefined }, "whk_2's watch did not hear whk_1's outcome");
  t.strictSame(wrongWebhook, { settled: true, value: undefined }, "whk_1's watch did not hear whk_3's outcome");
  second.close();
  elsewhere.close();
});

t.test("startDeliveryWatcher: on the store's webhook-deliveries channel, one replica's announcement reaches another's watch", async (t) => {
  const store = new MemoryDataStore();
  const errors: unknown[] = [];
  const listening = await startDeliveryWatcher(store, (error) => errors.push(error));
  const announcing = await startDeliveryWatcher(store, (error) => errors.push(error));
  t.strictSame(store.take(), [
    { call: "subscribe", channel: "webhook-deliveries" },
    { call: "subscribe", channel: "webhook-deliveries" },
  ], "each subscribed once, on the channel");
  const watch = listening.watch("whk_1");
  announcing.announce("whk_1", delivery("dlv_1"));
  t.strictSame(store.take(), [{ call: "publish", channel: "webhook-deliveries", message: JSON.stringify({ webhook_id: "whk_1", delivery: delivery("dlv_1") }) }]);
  t.strictSame(await watch.outcome("dlv_1", 1000), delivery("dlv_1"), "heard by the other replica's watch");
  watch.close();
  t.strictSame(errors, []);
});
