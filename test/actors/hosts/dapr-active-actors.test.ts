// GET /troupe/active-actors on the Dapr host's callback port lists the ids of
// the actors in memory on this replica, by type: the rolling-restart bench
// reads it to know which conversations a stopping replica hosts. Real HTTP to
// the real callback server, with a real HTTP server standing in for daprd's
// state API.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import t from "tap";
import { DaprActorHost } from "../../../actors/hosts/dapr/dapr-host.ts";
import { systemClock } from "../../../core/clock.ts";
import { createLogger } from "../../../core/log.ts";
import { freePort } from "../../support/net.ts";
import { eraseDefinition } from "../../../actors/actor.ts";
import { testActors } from "../test-actors.ts";

/** daprd's actor state API: every read finds nothing, every write succeeds. */
async function stateApi(): Promise<number> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on("end", () => res.writeHead(204).end());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as AddressInfo).port;
}

t.test("lists the actors in memory by type; a deactivated one leaves the list", async (t) => {
  const callbackPort = await freePort();
  const host = new DaprActorHost({
    daprHost: "127.0.0.1",
    daprHttpPort: await stateApi(),
    callbackPort,
    idleTimeoutMs: 60_000,
    clock: systemClock,
    log: createLogger("error"),
  });
  host.register(testActors.map((d) => eraseDefinition(d)));
  await host.start();
  t.teardown(() => host.stop());
  const base = `http://127.0.0.1:${callbackPort}`;
  const active = async () => {
    const res = await fetch(`${base}/troupe/active-actors`);
    t.equal(res.status, 200);
    return (await res.json()) as Record<string, string[]>;
  };
  const before = await active();
  t.same(Object.keys(before).sort(), testActors.map((d) => d.type).sort(), "one entry per registered type");
  t.ok(Object.values(before).every((ids) => ids.length === 0), "none active before any call");

  for (const id of ["b", "a"]) {
    const res = await fetch(`${base}/actors/TestCounter/${id}/method/increment`, { method: "PUT", body: "{}" });
    t.equal(res.status, 200, `increment ${id}`);
  }
  t.same((await active())["TestCounter"], ["a", "b"], "both counters, sorted");

  t.equal((await fetch(`${base}/actors/TestCounter/a`, { method: "DELETE" })).status, 200, "daprd deactivates a");
  t.same((await active())["TestCounter"], ["b"], "a moved away: only b is hosted here");
});
