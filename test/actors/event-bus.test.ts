// The typed event bus over the store's broadcast channel (actors/event-bus.ts),
// on the real embedded store: each bus keeps to its channel, a bus nobody
// wants never parses, and a message that is not JSON goes to onError.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { systemClock } from "../../core/clock.ts";
import { storeEventBus } from "../../actors/event-bus.ts";
import { EmbeddedDataStore } from "../../tenancy/embedded-data-store.ts";

interface Ping {
  type: "ping";
  n: number;
}

t.test("event bus: publish, channel isolation, wanted, bad messages", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-bus-"));
  const store = new EmbeddedDataStore(dir, systemClock);
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
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
