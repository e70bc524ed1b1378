// DELETE /v1/orgs/{id} on the Dapr actor host: daprd deletes actor state only
// from inside a turn, so the erasure calls each actor's own erase method
// (ConversationActor.erase, JobActor.delete, WebhookActor.erase), which
// clears its reminders and leaves its initial state — deleted from the state
// store, not written. Afterwards every Redis key is read (SCAN): no actor state
// key (`<app id>||<type>||<id>||<key>`) of the organization's conversations,
// jobs or webhooks is left, and nothing else of it outside the usage ledger.
import { mkdtempSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import t from "tap";
import { scanRedis } from "../support/distributed-scan.ts";
import { LocalCluster, daprAppId, repoDir, requireDaprPrerequisites } from "../support/dapr-cluster.ts";
import { populate } from "../support/org-footprint.ts";
import { startTestRedis } from "../support/redis.ts";
import { field, request, signup, type RequestOptions } from "../support/troupe.ts";
import { ownVectorIndex } from "../support/own-vector-index.ts";

t.setTimeout(240_000);
const redis = await startTestRedis();
requireDaprPrerequisites({ redisUrl: redis.url });
const vectorIndex = ownVectorIndex("orgdel-dapr");
const cluster = new LocalCluster({
  mode: "dapr",
  replicas: 1,
  dataDir: mkdtempSync(join(tmpdir(), "troupe-orgdel-dapr-")),
  appEntry: join(repoDir, "gateway/main.ts"),
  appEnv: { ...vectorIndex.env, LOG_LEVEL: "warn", OUTBOUND_ALLOW_HOSTS: "127.0.0.1", SIMULATED_VIDEO_DELAY_MS: "200", SIMULATED_VIDEO_DIR: mkdtempSync(join(tmpdir(), "troupe-orgdel-simvid-")) },
  redisUrl: redis.url,
});
const stateRedis = new Redis(redis.url);
t.teardown(async () => {
  await cluster.stop();
  await vectorIndex.drop();
  stateRedis.disconnect();
  await redis.stop();
});
await cluster.start();
const base = cluster.replicas[0]?.gatewayUrl ?? "";
const r = (method: string, path: string, options?: RequestOptions) => request(base, method, path, options);

/** The Dapr actor state keys (any actor type) that name one of these ids. */
async function actorStateKeys(needles: readonly string[]): Promise<string[]> {
  const keys: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = await stateRedis.scan(cursor, "MATCH", `${daprAppId}||*`, "COUNT", 1000);
    cursor = next;
    keys.push(...batch.filter((key) => needles.some((n) => key.includes(`||${n}||`))));
  } while (cursor !== "0");
  return keys.sort();
}

t.test("deleting an organization deletes its actors' state from the Dapr state store", async (t) => {
  const owner = await signup({ request: r }, "doomed-dapr");
  const other = await signup({ request: r }, "bystander-dapr");
  const marker = `MARK${randomUUID().replaceAll("-", "")}`;
  const footprint = await populate(r, owner, marker);
  const otherFootprint = await populate(r, other, `MARK${randomUUID().replaceAll("-", "")}`);

  const before = await actorStateKeys(footprint.needles);
  for (const type of ["ConversationActor", "JobActor", "WebhookActor"]) {
    t.ok(before.some((key) => key.startsWith(`${daprAppId}||${type}||`)), `the ${type} has state in Redis before: ${before.join(", ")}`);
  }

  const orgName = String(field((await r("GET", `/v1/orgs/${owner.orgId}`, { token: owner.token })).body, "name"));
  const done = await r("DELETE", `/v1/orgs/${owner.orgId}`, { token: owner.token, body: { confirm: orgName } });
  t.equal(done.status, 200, done.text);
  t.match(done.body, { erased: { conversations: 1, jobs: 1, webhooks: 1 } });

  t.same(await actorStateKeys(footprint.needles), [], "no actor state key of the organization's conversations, jobs or webhooks");
  const hits = await scanRedis(redis.url, footprint.needles);
  const kept = (where: string) => where.includes(" troupe:bill:") || / troupe:rl:/.test(where);
  t.same(
    hits.filter((h) => !kept(h.where)),
    [],
    "nothing of it in Redis outside the usage ledger and the rate-limit counters",
  );
  t.same(hits.filter((h) => h.needle === marker), [], "no content in Redis");
  t.ok((await actorStateKeys(otherFootprint.needles)).length >= 3, "the bystander's actors keep their state");
});
