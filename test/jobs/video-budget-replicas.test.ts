// Video budgets on two replicas sharing one Redis (the ledger's Lua scripts):
// 30 concurrent ray-2 jobs sent half to each replica against a $2.10 budget
// with $0.70 spent — exactly 2 start across both, 28 are 402, and the ledger
// ends at the limit; a job's hold lives in Redis, so a scene billed on one
// replica frees room the other sees. Real HTTP, the Luma fake.
import t from "tap";
import { startLumaFake } from "../fakes/video-fakes.ts";
import { projectWithLiveKey } from "../support/billing.ts";
import { startTestRedis } from "../support/redis.ts";
import { field, signup, startTestTroupe, type TestTroupe } from "../support/troupe.ts";
import { startJob, watchJob } from "./job-suite.ts";

t.setTimeout(120_000);
const luma = await startLumaFake("luma-key");
const redis = await startTestRedis();
const env = { REDIS_URL: redis.url, LUMA_API_KEY: "luma-key", LUMA_BASE_URL: luma.url, VIDEO_POLL_INTERVAL_MS: "50", JOB_WATCHDOG_MS: "1000", OUTBOUND_ALLOW_HOSTS: "127.0.0.1" };
const replicas: TestTroupe[] = [await startTestTroupe(env), await startTestTroupe(env)];
t.teardown(async () => {
  for (const r of replicas) await r.stop();
  await redis.stop();
  await luma.close();
});
const [a, b] = replicas as [TestTroupe, TestTroupe];
const sceneNanos = 700_000_000;
const ray2 = (prompt: string) => ({ model: "ray-2", routing_strategy: "manual", duration_seconds: 5, prompt });

t.test("two replicas, one budget: of 30 concurrent jobs exactly 2 start, the ledger ends at the limit", async (t) => {
  const user = await signup(a, "replicas");
  const p = await projectWithLiveKey(a, user.token, user.orgId, "replicas");
  t.equal((await a.request("PUT", `/v1/projects/${p.projectId}/budget`, { token: user.token, body: { monthly_limit_usd: (3 * sceneNanos) / 1e9, hard_limit: true } })).status, 200);
  const first = await startJob(b.request, p.liveKey, ray2("replicas first"));
  t.equal((await watchJob(b.request, p.liveKey, first)).job.status, "completed", "$0.70 spent on replica b");

  const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 === 0 ? a : b).request("POST", "/v1/video/generate", { token: p.liveKey, body: ray2(`replicas job ${i}`) })));
  const started = answers.filter((r) => r.status === 202).map((r) => String(field(r.body, "job_id")));
  t.equal(started.length, 2, "two start across both replicas");
  t.equal(answers.filter((r) => r.status === 402).length, 28);
  for (const id of started) t.equal((await watchJob(a.request, p.liveKey, id)).job.status, "completed");
  t.equal([...luma.tasks.values()].filter((task) => task.prompt.startsWith("replicas job")).length, 2, "only those reached the provider");
  const report = await a.request("GET", `/v1/projects/${p.projectId}/usage`, { token: user.token });
  t.equal(field(report.body, "live", "cost_nanos"), 3 * sceneNanos, "the ledger ends at the limit");
});
