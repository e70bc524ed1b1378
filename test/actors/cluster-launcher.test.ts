// `npm run cluster` (scripts/cluster.ts) end to end, with the test actor app
// standing in for the gateway (TROUPE_CLUSTER_APP): two replicas on PORT+i
// and DAPR_HTTP_PORT+i, one line per replica, both daprd report the actor
// runtime RUNNING with placement connected, an actor written through one
// replica is read through the other, and SIGTERM stops every process it
// started (nothing listens on those ports afterwards).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { z } from "zod";
import { startClusterLauncher } from "../support/cluster-launcher.ts";
import { requireDaprPrerequisites } from "../support/dapr-cluster.ts";
import { freePortPair, isPortFree } from "../support/net.ts";

t.setTimeout(120_000);
requireDaprPrerequisites({ redisUrl: process.env.REDIS_URL });

const port = await freePortPair();
const daprPort = await freePortPair();
const dataDir = mkdtempSync(join(tmpdir(), "troupe-cluster-launcher-"));
const launcher = startClusterLauncher({
  ...process.env,
  TROUPE_REPLICAS: "2",
  PORT: String(port),
  DAPR_HTTP_PORT: String(daprPort),
  TROUPE_DATA_DIR: dataDir,
  TROUPE_CLUSTER_APP: "test/support/dapr-actor-app.ts",
  LOG_LEVEL: "warn",
});
t.teardown(() => {
  if (launcher.child.exitCode === null) launcher.child.kill("SIGTERM");
});

const ready = await launcher.ready;
t.ok(ready, "the launcher reports ready");
if (!ready) t.comment(launcher.output());

t.test("one line per replica with both URLs", async (t) => {
  for (const i of [0, 1]) {
    t.match(launcher.output(), `replica ${i}: gateway http://127.0.0.1:${port + i}  daprd http://127.0.0.1:${daprPort + i}`);
  }
});

const metadata = z.object({
  actorRuntime: z.object({ runtimeStatus: z.string(), placement: z.string(), hostReady: z.boolean() }),
});

t.test("both daprd: actor runtime RUNNING, placement connected", async (t) => {
  for (const i of [0, 1]) {
    const meta = metadata.parse(await (await fetch(`http://127.0.0.1:${daprPort + i}/v1.0/metadata`)).json());
    t.match(meta.actorRuntime, { runtimeStatus: "RUNNING", placement: "placement: connected", hostReady: true }, `replica ${i}`);
  }
});

t.test("any replica serves any actor", async (t) => {
  const call = async (replica: number, id: string, method: string, input?: unknown) => {
    const response = await fetch(`http://127.0.0.1:${port + replica}/call/TestCounter/${id}/${method}`, {
      method: "POST",
      body: input === undefined ? "" : JSON.stringify(input),
    });
    return (await response.json()) as { output?: { count?: number } };
  };
  for (let i = 0; i < 6; i++) await call(0, `launcher-${i}`, "increment", { by: i + 1 });
  for (let i = 0; i < 6; i++) t.match(await call(1, `launcher-${i}`, "get"), { output: { count: i + 1 } });
});

t.test("SIGTERM stops everything it started", async (t) => {
  launcher.child.kill("SIGTERM");
  t.equal(await launcher.exited, 0, "the launcher exits 0");
  t.match(launcher.output(), "cluster: stopped");
  for (const p of [port, port + 1, daprPort, daprPort + 1]) t.ok(await isPortFree(p), `port ${p} free again`);
});
