// The job suite on the real Dapr cluster: two Troupe replicas (TROUPE_MODE=
// dapr), each with its own daprd, sharing Redis, placement, scheduler and a
// MinIO bucket for files. Jobs are created through one replica and read,
// listened to and cancelled through the other. Then a replica and its daprd
// are killed -9 mid-job: the jobs move to the survivor and complete, no
// segment is submitted twice to the Luma fake, each scene is billed once.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import t from "tap";
import { RedisLedgerStore } from "../../tenancy/redis-ledger-store.ts";
import { startLumaFake } from "../fakes/video-fakes.ts";
import { LocalCluster, repoDir, requireDaprPrerequisites } from "../support/dapr-cluster.ts";
import { testS3 } from "../support/minio.ts";
import { startTestRedis } from "../support/redis.ts";
import { request, signup, type RequestOptions } from "../support/troupe.ts";
import { jobSuite, startJob, watchJob, type JobView } from "./job-suite.ts";
import { projectUsage } from "./usage-reader.ts";

t.setTimeout(300_000);
const redis = await startTestRedis();
requireDaprPrerequisites({ redisUrl: redis.url });
const s3 = testS3(`troupe-jobs-${process.pid}`);
if (typeof s3 === "string") throw new Error(s3);
const luma = await startLumaFake("luma-key");
luma.pollsBeforeDone = 3;

const cluster = new LocalCluster({
  mode: "dapr",
  replicas: 2,
  dataDir: mkdtempSync(join(tmpdir(), "troupe-jobs-cluster-")),
  appEntry: join(repoDir, "gateway/main.ts"),
  appEnv: {
    ...s3.env,
    LOG_LEVEL: "warn",
    SIMULATED_VIDEO_DELAY_MS: "400",
    SIMULATED_VIDEO_DIR: mkdtempSync(join(tmpdir(), "troupe-jobs-simvid-")),
    JOB_WATCHDOG_MS: "2000",
    LUMA_API_KEY: "luma-key",
    LUMA_BASE_URL: luma.url,
    VIDEO_POLL_INTERVAL_MS: "150",
    OUTBOUND_ALLOW_HOSTS: "127.0.0.1",
  },
  redisUrl: redis.url,
});
const store = new RedisLedgerStore(redis.url);
const stateRedis = new Redis(redis.url);
t.teardown(async () => {
  await cluster.stop();
  await store.close();
  stateRedis.disconnect();
  await luma.close();
  s3.stop();
  await redis.stop();
});
await cluster.start();
const urls = cluster.replicas.map((r) => r.gatewayUrl);
const at = (i: number) => (method: string, path: string, options?: RequestOptions) => request(urls[i % urls.length] ?? "", method, path, options);

const a = await signup({ request: at(0) }, "jobs-cluster-a");
const b = await signup({ request: at(1) }, "jobs-cluster-b");
jobSuite(t, {
  at,
  wsUrl: (i) => (urls[i % urls.length] ?? "").replace("http", "ws"),
  keyA: a.testKey,
  keyB: b.testKey,
  orgA: a.orgId,
  // Dapr's Redis state store keeps an actor's state under <app id>||<type>||<id>||<key>.
  actorStateGone: async (id) => (await stateRedis.exists(`troupe||JobActor||${id}||state`)) === 0,
  usage: () => projectUsage(store, a.projectId),
  clipSeconds: 1,
  videoDefaults: { model: "simulated-video", routing_strategy: "manual" },
});

t.test("operators: JobActor is a registered actor type on both replicas", async (t) => {
  for (const replica of cluster.replicas) {
    const meta = (await (await fetch(`${replica.daprHttpUrl}/v1.0/metadata`)).json()) as { actorRuntime?: { activeActors?: { type: string }[] } };
    t.ok(meta.actorRuntime?.activeActors?.some((x) => x.type === "JobActor"), `replica ${replica.index}`);
  }
});

t.test("a replica and its daprd killed -9 mid-job: the jobs complete on the survivor, no segment submitted twice, each scene billed once", async (t) => {
  const jobs: { id: string; scenes: string[] }[] = [];
  for (let j = 0; j < 6; j++) {
    const scenes = [0, 1, 2].map((s) => `cluster job ${j} scene ${s}`);
    const id = await startJob(at(j), a.testKey, { prompt: `cluster job ${j}`, scenes, model: "ray-2", routing_strategy: "manual", narration_text: `narration ${j}` });
    jobs.push({ id, scenes });
  }
  await watchJob(at(0), a.testKey, jobs[0]!.id, 60_000, (job) => job.segments[0]?.status === "completed");
  const before = await Promise.all(jobs.map(async (j) => (await at(0)("GET", `/v1/jobs/${j.id}`, { token: a.testKey })).body as JobView));
  t.ok(before.some((j) => j.status !== "completed"), `killed mid-job: ${before.map((j) => j.segments.map((s) => s.status[0]).join("")).join(" ")}`);
  await cluster.killReplica(1);
  for (const j of jobs) {
    const { job } = await watchJob(at(0), a.testKey, j.id, 120_000);
    t.equal(job.status, "completed", `job ${j.id}: ${JSON.stringify(job.error)}`);
    for (const scene of j.scenes) t.equal(luma.submissions(scene), 1, `"${scene}" submitted once`);
  }
  const usage = await projectUsage(store, a.projectId);
  for (const j of jobs) {
    const ids = usage.filter((u) => u.request_id.startsWith(`job:${j.id}:segment:`)).map((u) => u.request_id).sort();
    t.same(ids, [0, 1, 2].map((s) => `job:${j.id}:segment:${s}`), "each scene billed exactly once");
  }
});
