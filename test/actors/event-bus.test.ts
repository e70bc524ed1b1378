// The typed event bus over the store's broadcast channel (actors/event-bus.ts),
// on the real embedded store: each bus keeps to its channel, a bus nobody
// wants never parses, and a message that is not JSON goes to onError; a
// resource bus delivers a resource's events to its listeners only, until
// they stop.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import { systemClock } from "../../core/clock.ts";
import { storeEventBus, storeResourceEventBus } from "../../actors/event-bus.ts";
import { EmbeddedDataStore } from "../../tenancy/embedded-data-store.ts";

interface Ping {
  type: "ping";
  n: number;
}

function openStore(t: Test): EmbeddedDataStore {
  const dir = mkdtempSync(join(tmpdir(), "troupe-bus-"));
  const store = new EmbeddedDataStore(dir, systemClock);
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return store;
}

t.test("event bus: publish, channel isolation, wanted, bad messages", async (t) => {
  const store = openStore(t);
  const errors: unknown[] = [];
  const pings = storeEventBus<Ping>(store, "pings", (error) => errors.push(error));
  const others = storeEventBus<Ping>(store, "others", (error) => errors.push(error));

  const received: Array<{ event: Ping; json: string }> = [];
  let wanted = true;
  await pings.subscribe((event, json) => received.push({ event, json }), () => wanted);

  pings.publish({ type: "ping", n: 1 });
  others.publish({ type: "ping", n: 2 });
  // The embedded store's publish emits synchronously inside its promise.
  await new Promise((resolve) => setImmediate(resolve));
  t.same(received, [{ event: { type: "ping", n: 1 }, json: '{"type":"ping","n":1}' }], "only the bus's own channel arrives, with its JSON");

  wanted = false;
  pings.publish({ type: "ping", n: 3 });
  await store.publish("pings", "not json");
  t.equal(received.length, 1, "nothing is delivered while unwanted");
  t.same(errors, [], "an unwanted message is not even parsed");

  wanted = true;
  await store.publish("pings", "not json");
  t.equal(errors.length, 1, "a message that is not JSON goes to onError");
  t.ok(errors[0] instanceof SyntaxError);
  t.equal(received.length, 1);
});

t.test("resource event bus: one channel per resource, until the listener stops", async (t) => {
  const store = openStore(t);
  const errors: unknown[] = [];
  const bus = storeResourceEventBus<{ id: string; n: number }>(store, "ticks", (tick) => tick.id, (error) => errors.push(error));
  const heard: string[] = [];
  const stop = await bus.listen("a", (_, json) => heard.push(json));
  const sent: string[] = [];
  await store.subscribe("ticks:b", (message) => sent.push(message));
  bus.publish({ id: "a", n: 1 });
  bus.publish({ id: "b", n: 2 });
  await new Promise((resolve) => setImmediate(resolve));
  t.same(heard, ['{"id":"a","n":1}'], "a's listener hears a's events only");
  t.same(sent, ['{"id":"b","n":2}'], "b's went to b's channel, ticks:b");
  await stop();
  bus.publish({ id: "a", n: 3 });
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(heard.length, 1, "nothing after stop");
  await store.publish("ticks:b", "not json");
  t.same(errors, [], "a raw subscriber's channel is not the bus's listener");
});
