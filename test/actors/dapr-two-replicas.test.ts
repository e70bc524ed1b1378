// The actor conformance suite on real Dapr with two replicas (two test actor
// apps, each with its own daprd, sharing placement, scheduler and Redis):
// every case through replica 0, whose actors placement spreads over both,
// plus failover — replica 1 killed with -9 (app and daprd), its actors
// re-activated on replica 0 with their state.
import t from "tap";
import { startTarget } from "./conformance-target.ts";
import { runConformance } from "./conformance.ts";

t.setTimeout(240_000); // two replicas, idle timeouts, reminders, restarts and a failover

const target = await startTarget("dapr", 2);
t.teardown(() => target.stop());
await runConformance(t, target);

await t.test("any replica serves any actor: calls through replica 1 see replica 0's writes", async (t) => {
  const ids = Array.from({ length: 10 }, (_, i) => `cross-${i}-${Date.now()}`);
  for (const [i, id] of ids.entries()) {
    const written = await target.call(id, "increment", { by: i + 1 }, 0);
    t.equal(written.status, 200, `write ${id} through replica 0`);
  }
  for (const [i, id] of ids.entries()) {
    const read = await target.call(id, "get", undefined, 1);
    t.equal(read.status, 200, `read ${id} through replica 1`);
    t.match(read.output, { count: i + 1 }, `${id} state`);
  }
});
