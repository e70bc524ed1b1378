// The agent suite on the real Dapr cluster: two Troupe replicas (the real
// gateway, TROUPE_MODE=dapr), each with its own daprd, sharing Redis,
// placement, scheduler and Elasticsearch. Conversations are created through
// one replica and continued through the other. Also: a key revoked through
// replica 0 is refused by replica 1 within 5 s; both daprd report the actor
// runtime RUNNING with ConversationActor active; killing a replica moves its
// conversations to the other with their state.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { LocalCluster, repoDir, requireDaprPrerequisites } from "../support/dapr-cluster.ts";
import { startTestRedis } from "../support/redis.ts";
import { field, request, signup, str, type RequestOptions } from "../support/troupe.ts";
import { agentSuite } from "./agent-suite.ts";
import { openEventSocket } from "../support/event-socket.ts";

t.setTimeout(240_000);
const elasticsearchUrl = process.env["ELASTICSEARCH_URL"];
if (!elasticsearchUrl) throw new Error("ELASTICSEARCH_URL is not set: the cluster's shared vector index needs Elasticsearch (npm run elasticsearch)");
const redis = await startTestRedis();
requireDaprPrerequisites({ redisUrl: redis.url });

const indexName = `troupe-agents-${process.pid}-${Date.now()}`;
const cluster = new LocalCluster({
  mode: "dapr",
  replicas: 2,
  dataDir: mkdtempSync(join(tmpdir(), "troupe-agents-cluster-")),
  appEntry: join(repoDir, "gateway/main.ts"),
  appEnv: { ELASTICSEARCH_URL: elasticsearchUrl, ELASTICSEARCH_INDEX: indexName, LOG_LEVEL: "warn" },
  redisUrl: redis.url,
});
t.teardown(async () => {
  await cluster.stop();
  await fetch(`${elasticsearchUrl}/${indexName}`, { method: "DELETE" }).catch(() => undefined);
  await redis.stop();
});
await cluster.start();
const urls = cluster.replicas.map((r) => r.gatewayUrl);
const at = (i: number) => (method: string, path: string, options?: RequestOptions) => request(urls[i % urls.length] ?? "", method, path, options);

const a = await signup({ request: at(0) }, "cluster-a");
const b = await signup({ request: at(1) }, "cluster-b");
agentSuite(t, { at, keyA: a.testKey, keyB: b.testKey });

t.test("a key revoked through replica 0 is refused by replica 1 within 5 s", async (t) => {
  const created = await at(0)("POST", `/v1/environments/${a.developmentEnvId}/api-keys`, { token: a.token, body: { name: "revoke me" } });
  const key = str(created.body, "key");
  t.equal((await at(1)("GET", "/v1/agents/conversations", { token: key })).status, 200, "replica 1 accepts and caches it");
  const revokedAt = Date.now();
  t.equal((await at(0)("DELETE", `/v1/api-keys/${str(created.body, "id")}`, { token: a.token })).status, 200);
  let refusedAfter = -1;
  while (Date.now() - revokedAt < 6000) {
    if ((await at(1)("GET", "/v1/agents/conversations", { token: key })).status === 401) {
      refusedAfter = Date.now() - revokedAt;
      break;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  t.ok(refusedAfter >= 0 && refusedAfter <= 5000, `refused by replica 1 after ${refusedAfter} ms`);
});

t.test("live events cross replicas: listen on replica 1, talk through replica 0", async (t) => {
  const created = await at(0)("POST", "/v1/agents/conversations", { token: a.testKey, body: {} });
  const id = str(created.body, "id");
  const { ws, frames } = await openEventSocket<{ type: string; message?: { role: string } }>(
    `${(urls[1] ?? "").replace("http", "ws")}/v1/agents/conversations/${id}/events`,
    ["troupe.v1", `bearer.${a.testKey}`],
  );
  const sent = await at(0)("POST", `/v1/agents/conversations/${id}/messages`, { token: a.testKey, body: { content: "say across replicas" } });
  t.equal(sent.status, 200, `the message was taken: ${JSON.stringify(sent.body)}`);
  const deadline = Date.now() + 10_000;
  while (frames.filter((f) => f.type === "message.appended").length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  t.equal(frames[0]?.type, "conversation");
  t.same(
    frames.filter((f) => f.type === "message.appended").map((f) => f.message?.role),
    ["user", "assistant"],
    `events from the actor reach a socket on the other replica (frames: ${JSON.stringify(frames.map((f) => f.type))})`,
  );
  t.equal(ws.readyState, WebSocket.OPEN, "the socket stays open after the upgrade");
  ws.close();
});

t.test("operators: both daprd report RUNNING, placement connected, ConversationActor listed", async (t) => {
  let seen = 0;
  for (const replica of cluster.replicas) {
    const meta = (await (await fetch(`${replica.daprHttpUrl}/v1.0/metadata`)).json()) as {
      actorRuntime?: { runtimeStatus?: string; placement?: string; activeActors?: { type: string; count: number }[] };
    };
    t.equal(meta.actorRuntime?.runtimeStatus, "RUNNING", `replica ${replica.index}`);
    t.match(meta.actorRuntime?.placement ?? "", /connected/);
    seen += meta.actorRuntime?.activeActors?.find((x) => x.type === "ConversationActor")?.count ?? 0;
  }
  t.ok(seen > 0, `ConversationActor active across the replicas: ${seen}`);
});

t.test("killing a replica moves its conversations to the other with their state", async (t) => {
  const ids: string[] = [];
  for (let i = 0; i < 6; i++) {
    const res = await at(0)("POST", "/v1/agents/conversations", { token: a.testKey, body: {} });
    const id = str(res.body, "id");
    await at(i)("POST", `/v1/agents/conversations/${id}/messages`, { token: a.testKey, body: { content: `say before ${i}` } });
    ids.push(id);
  }
  await cluster.killReplica(1);
  for (const [i, id] of ids.entries()) {
    let res = await at(0)("POST", `/v1/agents/conversations/${id}/messages`, { token: a.testKey, body: { content: `say after ${i}` } });
    const deadline = Date.now() + 30_000;
    while (res.status !== 200 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 500));
      res = await at(0)("POST", `/v1/agents/conversations/${id}/messages`, { token: a.testKey, body: { content: `say after ${i}` } });
    }
    t.equal(res.status, 200, `conversation ${i} answers through the survivor`);
    const contents = (field(res.body, "messages") as { content: string }[]).map((m) => m.content);
    t.same(contents, [`say before ${i}`, `before ${i}`, `say after ${i}`, `after ${i}`], "history kept across the move");
  }
});
