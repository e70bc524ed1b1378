// The shared event stream (gateway/event-stream-ws.ts) on a real uWS app and
// the real embedded store, over real sockets. Its route reads the resource
// only once subscribed to the resource's own channel, so an event committed
// while the socket opens is delivered after the first frame, not lost (with
// one channel subscribed at start and sockets registered at open, it was);
// an event the first frame already shows is not sent; a socket hears only
// its resource; and no subscription outlives its socket, or a socket closed
// because its resource was not found (4404).
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import * as uWS from "uWebSockets.js";
import { storeResourceEventBus } from "../../actors/event-bus.ts";
import { systemClock } from "../../core/clock.ts";
import { TroupeError } from "../../core/errors.ts";
import { createLogger } from "../../core/log.ts";
import { createAdmission } from "../../gateway/admission.ts";
import { attachEventStream } from "../../gateway/event-stream-ws.ts";
import { defineWsRoute } from "../../gateway/route.ts";
import { EmbeddedDataStore } from "../../tenancy/embedded-data-store.ts";
import { KeyRevocations } from "../../tenancy/key-revocations.ts";
import { openEventSocket } from "../support/event-socket.ts";
import { waitFor } from "../support/net.ts";

interface Tick {
  id: string;
  n: number;
}

const dir = mkdtempSync(join(tmpdir(), "troupe-stream-"));
const store = new EmbeddedDataStore(dir, systemClock);
// The subscriptions the stream holds right now, by channel.
const subscribed = new Map<string, number>();
const counted = {
  publish: (channel: string, message: string) => store.publish(channel, message),
  subscribe: async (channel: string, onMessage: (message: string) => void) => {
    subscribed.set(channel, (subscribed.get(channel) ?? 0) + 1);
    await store.subscribe(channel, onMessage);
  },
  unsubscribe: async (channel: string, onMessage: (message: string) => void) => {
    subscribed.set(channel, (subscribed.get(channel) ?? 0) - 1);
    await store.unsubscribe(channel, onMessage);
  },
};
const held = (): number => [...subscribed.values()].reduce((sum, n) => sum + n, 0);
const bus = storeResourceEventBus<Tick>(counted, "ticks", (tick) => tick.id, (error) => t.fail(String(error)));

// Each resource's current tick; reading one first publishes what `inFlight` holds, as a turn committing meanwhile would.
const current = new Map<string, number>([["a", 2], ["b", 0]]);
const inFlight = new Map<string, number[]>([["a", [1, 3]]]);
// Reading "slow" waits for the test to open this gate.
let openGate: () => void = () => undefined;
const gate = new Promise<void>((resolve) => (openGate = resolve));
let slowReads = 0;
const route = defineWsRoute({
  kind: "ws",
  path: "/ticks/:id/events",
  summary: "ticks",
  tag: "test",
  auth: "none",
  accept: async (ctx) => {
    const id = ctx.params.id;
    const read = async (): Promise<Tick> => {
      if (id === "slow") {
        slowReads += 1;
        await gate;
        return { id, n: 0 };
      }
      for (const n of inFlight.get(id) ?? []) bus.publish({ id, n });
      const n = current.get(id);
      if (n === undefined) throw new TroupeError("not_found", "no such ticker");
      return { id, n };
    };
    return { id, keyId: "key-1", read };
  },
});

const app = uWS.App();
const log = createLogger("silent");
attachEventStream(app, route, {
  firstFrame: (id, tick) => ({ type: "snapshot", id, n: tick.n }),
  alreadyShown: (snapshot) => (tick) => tick.n <= snapshot.n,
}, {
  events: bus,
  revocations: new KeyRevocations(),
  log,
  admission: createAdmission({ authenticate: () => ({ kind: "none" }) }, { checkRateLimit: () => undefined }),
});
const port = await new Promise<number>((resolve, reject) =>
  app.listen("127.0.0.1", 0, (socket) => (socket ? resolve(uWS.us_socket_local_port(socket)) : reject(new Error("listen failed")))),
);
t.teardown(async () => {
  app.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

t.test("an event published while the resource was read follows the first frame; one the frame shows is not sent", async (t) => {
  const { ws, frames } = await openEventSocket<{ type?: string; id: string; n: number }>(`ws://127.0.0.1:${port}/ticks/a/events`, []);
  t.same(frames[0], { type: "snapshot", id: "a", n: 2 }, "the first frame is the resource as read");
  bus.publish({ id: "b", n: 7 });
  bus.publish({ id: "a", n: 4 });
  await waitFor(async () => frames.length >= 3, 5000, "the live event");
  t.same(frames.slice(1), [{ id: "a", n: 3 }, { id: "a", n: 4 }], "tick 3 (in flight during the read) then 4; tick 1, older than the frame, dropped; b's never");
  t.equal(subscribed.get("ticks:a"), 1, "the socket holds its resource's channel only");
  ws.close();
  await waitFor(async () => held() === 0, 5000, "the subscription to end with the socket").catch(() => undefined);
  t.equal(subscribed.get("ticks:a"), 0, "closing the socket ended its subscription");
});

t.test("a resource not found closes the socket with 4404 before any frame, and keeps no subscription", async (t) => {
  const socket = await openEventSocket<unknown>(`ws://127.0.0.1:${port}/ticks/missing/events`, []);
  const { code, reason } = await socket.closing;
  t.equal(code, 4404, "the upgrade completed, the resource check closed it");
  t.match(JSON.parse(reason), { code: "not_found", message: "no such ticker", request_id: /^req_/ }, "the reason is the error body's error object");
  t.same(socket.frames, [], "no frame before the close");
  t.equal(subscribed.get("ticks:missing"), 0, "subscribed while it was read, and unsubscribed once it was not found");
  t.equal(held(), 0);
});

t.test("a client gone while the resource was read keeps no subscription", async (t) => {
  const client = connect(port, "127.0.0.1");
  await new Promise((resolve) => client.once("connect", resolve));
  client.write("GET /ticks/slow/events HTTP/1.1\r\nhost: x\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\n\r\n");
  await waitFor(async () => slowReads === 1, 5000, "the read to start");
  t.equal(subscribed.get("ticks:slow"), 1, "subscribed before the read");
  client.destroy();
  // uWS notices the close (onAborted) before the read ends.
  await new Promise((resolve) => setTimeout(resolve, 100));
  openGate();
  await waitFor(async () => subscribed.get("ticks:slow") === 0, 5000, "the subscription to end");
  t.equal(held(), 0, "no socket was opened and nothing is subscribed");
});
