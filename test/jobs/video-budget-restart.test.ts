// A video job's hold on a hard budget survives a restart of the embedded
// host (whose ledger keeps holds in memory): the job, resumed by its durable
// reminder, holds its open parts again on its first step, so a job that
// would need that money is still refused; once the job ends, it fits.
// Real HTTP, the Luma fake (ray-2, $0.70 a 5 s scene).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { startLumaFake } from "../fakes/video-fakes.ts";
import { projectWithLiveKey } from "../support/billing.ts";
import { field, signup, startTestTroupe, type TestTroupe } from "../support/troupe.ts";
import { startJob, watchJob } from "./job-suite.ts";

t.setTimeout(120_000);
const luma = await startLumaFake("luma-key");
t.teardown(() => luma.close());
const dataDir = mkdtempSync(join(tmpdir(), "troupe-video-budget-"));
const env = { LUMA_API_KEY: "luma-key", LUMA_BASE_URL: luma.url, VIDEO_POLL_INTERVAL_MS: "50", JOB_WATCHDOG_MS: "500", OUTBOUND_ALLOW_HOSTS: "127.0.0.1", TROUPE_DATA_DIR: dataDir };
const sceneNanos = 700_000_000;
const ray2 = (prompt: string, scenes?: string[]) => ({ model: "ray-2", routing_strategy: "manual", duration_seconds: 5, prompt, ...(scenes ? { scenes } : {}) });

t.test("after a restart the unfinished job holds its scenes again", async (t) => {
  let troupe: TestTroupe = await startTestTroupe(env);
  const user = await signup(troupe, "restart");
  const p = await projectWithLiveKey(troupe, user.token, user.orgId, "restart");
  const put = await troupe.request("PUT", `/v1/projects/${p.projectId}/budget`, { token: user.token, body: { monthly_limit_usd: (2 * sceneNanos) / 1e9, hard_limit: true } });
  t.equal(put.status, 200, put.text);
  luma.pollsBeforeDone = 1_000_000;
  const id = await startJob(troupe.request, p.liveKey, ray2("held", ["held a", "held b"]));
  await watchJob(troupe.request, p.liveKey, id, 30_000, (j) => j.status === "processing");
  t.equal((await troupe.request("POST", "/v1/video/generate", { token: p.liveKey, body: ray2("before restart") })).status, 402, "both scenes held");

  await troupe.stop();
  troupe = await startTestTroupe(env);
  t.teardown(() => troupe.stop());
  // The job's watchdog (500 ms) runs its first step, which restores the hold.
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  const after = await troupe.request("POST", "/v1/video/generate", { token: p.liveKey, body: ray2("after restart") });
  t.equal(after.status, 402, `still held after the restart: ${after.text}`);
  t.equal(field(after.body, "error", "details", "reserved_usd"), 1.4);

  luma.pollsBeforeDone = 1;
  t.equal((await watchJob(troupe.request, p.liveKey, id)).job.status, "completed");
  const report = await troupe.request("GET", `/v1/projects/${p.projectId}/usage`, { token: user.token });
  t.equal(field(report.body, "live", "cost_nanos"), 2 * sceneNanos, "both scenes billed: the whole budget, not more");
});
