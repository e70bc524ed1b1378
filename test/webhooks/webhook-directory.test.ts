// The directory's per-process cache of an organization's webhooks: a change
// made through one replica's directory must reach the publisher's lookups on
// another replica (two directories on one Redis, as two gateway replicas
// are), and at once in the replica that made it.
import t from "tap";
import { WebhookDirectory } from "../../actors/webhooks/directory.ts";
import type { Webhook } from "../../actors/webhooks/types.ts";
import { RedisDataStore } from "../../tenancy/redis-data-store.ts";
import { startTestRedis } from "../support/redis.ts";
import { waitFor } from "../support/net.ts";

const redis = await startTestRedis();
t.teardown(() => redis.stop());
const prefix = `test:webhook-directory:${process.pid}:${Date.now()}:`;
const storeA = new RedisDataStore(redis.url, prefix);
const storeB = new RedisDataStore(redis.url, prefix);
t.teardown(async () => {
  await storeA.close();
  await storeB.close();
});
const replicaA = new WebhookDirectory(storeA);
const replicaB = new WebhookDirectory(storeB);
await replicaA.start();
await replicaB.start();

/** An event of the organization as a whole: every session-made webhook (no audience) receives it. */
const origin = (org: string) => ({ organization_id: org, project_id: null, environment_id: null });

const hook = (id: string, status: Webhook["status"] = "active"): Webhook => ({
  id,
  url: "https://receiver.example/hook",
  events: ["job.completed"],
  status,
  disabled_reason: null,
  created_at: new Date().toISOString(),
});

t.test("a webhook created on one replica is found by the other's cached lookup", async (t) => {
  const org = "org_dir_1";
  t.same(await replicaB.subscribed(origin(org), "job.completed"), [], "B caches the empty list");
  await replicaA.created(org, hook("wh_dir_1"));
  t.same(await replicaA.subscribed(origin(org), "job.completed"), ["wh_dir_1"], "A sees it at once");
  await waitFor(async () => (await replicaB.subscribed(origin(org), "job.completed")).length === 1, 5000, "B to see the new webhook");
  t.same(await replicaB.subscribed(origin(org), "job.completed"), ["wh_dir_1"]);
  t.same(await replicaB.subscribed(origin(org), "job.failed"), [], "not subscribed to job.failed");
});

t.test("a webhook deactivated on one replica leaves the other's lookup", async (t) => {
  const org = "org_dir_2";
  await replicaA.created(org, hook("wh_dir_2"));
  await waitFor(async () => (await replicaB.subscribed(origin(org), "job.completed")).length === 1, 5000, "B to see the webhook");
  await replicaA.updated(org, hook("wh_dir_2", "inactive"));
  t.same(await replicaA.subscribed(origin(org), "job.completed"), [], "A at once");
  await waitFor(async () => (await replicaB.subscribed(origin(org), "job.completed")).length === 0, 5000, "B to drop the inactive webhook");
});
