// Webhooks on the real Dapr cluster: two replicas (the webhook test app,
// TROUPE_MODE=dapr), each with its own daprd, sharing Redis, placement and
// scheduler. Webhooks are created and events published through replica 0;
// the WebhookActors spread over both replicas. Events first fail, then their
// retries hang at the receiver and replica 1 — app and daprd — is killed
// with -9 mid-retry. Every event still reaches every webhook, each delivery
// signed and carrying the event's original id: the outbox lives in the actor
// state store and the retry in a durable reminder, which fires on replica 0.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { z } from "zod";
import { startWebhookReceiver } from "../fakes/webhook-receiver.ts";
import { LocalCluster, repoDir, requireDaprPrerequisites } from "../support/dapr-cluster.ts";
import { waitFor } from "../support/net.ts";
import { startTestRedis } from "../support/redis.ts";
import { request, signup, str } from "../support/troupe.ts";
import { publishPath } from "../support/webhook-publish-path.ts";

t.setTimeout(240_000);
const redis = await startTestRedis();
requireDaprPrerequisites({ redisUrl: redis.url });
const cluster = new LocalCluster({
  mode: "dapr",
  replicas: 2,
  dataDir: mkdtempSync(join(tmpdir(), "troupe-webhooks-cluster-")),
  appEntry: join(repoDir, "test/support/webhook-app.ts"),
  appEnv: { LOG_LEVEL: "warn", OUTBOUND_ALLOW_HOSTS: "127.0.0.1", WEBHOOK_RETRY_SCALE: "0.01", WEBHOOK_TIMEOUT_MS: "5000" },
  redisUrl: redis.url,
});
t.teardown(async () => {
  await cluster.stop();
  await redis.stop();
});
await cluster.start();
const base = cluster.replicas[0]!.gatewayUrl;
const at0 = { request: (m: string, p: string, o?: Parameters<typeof request>[3]) => request(base, m, p, o) };

const metadata = z.object({ actorRuntime: z.object({ activeActors: z.array(z.object({ type: z.string(), count: z.number().default(0) })) }) });
async function webhookActorsOn(replica: number): Promise<number> {
  const res = await fetch(`${cluster.replicas[replica]!.daprHttpUrl}/v1.0/metadata`);
  const meta = metadata.parse(await res.json());
  return meta.actorRuntime.activeActors.find((a) => a.type === "WebhookActor")?.count ?? 0;
}

t.test("kill -9 of a replica and its daprd mid-retry: every event delivered, same ids", async (t) => {
  const receiver = await startWebhookReceiver();
  t.teardown(() => receiver.close());
  let phase: "publishing" | "hang" | "up" = "publishing";
  receiver.answerFor = () => (phase === "publishing" ? { status: 500 } : phase === "hang" ? "hang" : { status: 200 });

  const user = await signup(at0, "cluster-hooks");
  const webhooks = 6;
  for (let i = 0; i < webhooks; i++) {
    const created = await at0.request("POST", "/v1/webhooks", { token: user.testKey, body: { url: `${receiver.url}/${i}`, events: ["job.completed"] } });
    t.equal(created.status, 201, created.text);
    receiver.secrets.set(`/hook/${i}`, str(created.body, "secret"));
  }
  const ids = Array.from({ length: 10 }, (_, i) => `evt_cluster_${i}`);
  for (const id of ids) {
    const res = await at0.request("POST", publishPath, {
      body: { id, type: "job.completed", organization_id: user.orgId, project_id: user.projectId, environment_id: user.developmentEnvId, created_at: new Date().toISOString(), data: { job_id: id } },
    });
    t.equal(res.status, 202, `publish ${id}`);
  }
  const seen = (answer: number | "hang") => new Set(receiver.received.filter((r) => r.answered === answer).map((r) => `${r.path}|${r.eventId}`));
  await waitFor(async () => seen(500).size === webhooks * ids.length, 30_000, "every first attempt (answered 500)");
  const onReplica1 = await webhookActorsOn(1);
  t.ok(onReplica1 > 0, `replica 1 hosts ${onReplica1} of the ${webhooks} WebhookActors`);

  phase = "hang";
  await waitFor(async () => seen("hang").size > 0, 20_000, "retries hanging at the receiver");
  const inFlight = seen("hang").size;
  await cluster.killReplica(1);
  t.ok(inFlight > 0, `replica 1 killed with ${inFlight} retries in flight`);
  phase = "up";

  await waitFor(async () => seen(200).size === webhooks * ids.length, 90_000, "every event at every webhook after the kill");
  const expected = new Set<string>();
  for (let i = 0; i < webhooks; i++) for (const id of ids) expected.add(`/hook/${i}|${id}`);
  t.same([...seen(200)].sort(), [...expected].sort(), "every (webhook, event) pair succeeded, with the original event ids");
  t.ok(receiver.received.every((r) => r.verified), "every attempt verified with its webhook's secret");
  t.ok(receiver.received.every((r) => ids.includes(r.eventId) && r.headers["webhook-id"] === r.eventId), "no attempt carried another id");
});
