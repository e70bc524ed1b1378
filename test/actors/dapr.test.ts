// The actor conformance suite on real Dapr, one replica: daprd 1.18.3 +
// placement + scheduler (dapr/.bin, built by `npm run dapr:build`) + Redis
// (redis-server started here unless REDIS_URL is set), hosting the test
// actors with the Dapr host. Missing binaries or Redis fail the run with the
// reason; nothing is skipped and nothing between Troupe and Dapr is mocked.
import t from "tap";
import { z } from "zod";
import { startTarget } from "./conformance-target.ts";
import { runConformance } from "./conformance.ts";

t.setTimeout(180_000); // cluster start, idle timeouts, reminders and restarts

const target = await startTarget("dapr", 1);
t.teardown(() => target.stop());
await runConformance(t, target);

const metadata = z.object({
  actorRuntime: z.object({
    runtimeStatus: z.string(),
    hostReady: z.boolean(),
    placement: z.string(),
    activeActors: z.array(z.object({ type: z.string(), count: z.number().default(0) })),
  }),
});

await t.test("operators' view: daprd /v1.0/metadata lists active actors per type", async (t) => {
  const call = await target.call("metadata-probe", "increment", { by: 1 });
  t.equal(call.status, 200, "an actor is active");
  const response = await fetch(`${target.cluster.replicas[0]!.daprHttpUrl}/v1.0/metadata`);
  const meta = metadata.parse(await response.json());
  t.equal(meta.actorRuntime.runtimeStatus, "RUNNING", "actor runtime RUNNING");
  t.equal(meta.actorRuntime.placement, "placement: connected", "placement connected");
  const counter = meta.actorRuntime.activeActors.find((a) => a.type === "TestCounter");
  t.ok(counter && counter.count >= 1, `TestCounter listed with its active count (${JSON.stringify(meta.actorRuntime.activeActors)})`);
});

await t.test("the Dapr host keeps state in memory, and re-reads it after an event-loop stall", async (t) => {
  const id = `stall-${Date.now()}`;
  const daprd = target.cluster.replicas[0]!.daprHttpUrl!;
  t.equal((await target.call(id, "increment", { by: 1 })).status, 200, "actor active with count 1");
  // Another replica's write while this one was (in daprd's eyes) away: straight into Dapr's actor state.
  const overwrite = await fetch(`${daprd}/v1.0/actors/TestCounter/${id}/state`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify([{ operation: "upsert", request: { key: "state", value: { count: 500, log: [], marks: [], maxConcurrent: 0 } } }]),
  });
  t.equal(overwrite.status, 204, "state written through daprd");
  t.match((await target.call(id, "get")).output, { count: 1 }, "the in-memory copy serves reads (no state read per turn)");
  // Block the replica's event loop past daprd's health-probe timeout.
  t.equal((await target.call(`${id}-blocker`, "busy", 1_000)).status, 200, "event loop blocked for 1 s");
  t.match((await target.call(id, "get")).output, { count: 500 }, "after the stall the state is read from the store again");
});
