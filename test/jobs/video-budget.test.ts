// Video jobs held to a hard budget, over real HTTP against an embedded
// Troupe whose video provider is the Luma fake (ray-2: 5 s clips at
// $0.14/s, $0.70 a scene) and whose narration is OpenAI's tts-1 on the media
// fake ($15 per million characters): a job is admitted only when its whole
// estimate (scenes × clip seconds × price, narration included) fits under
// the limit, else 402 before any provider call; each scene settles its part;
// a cancelled or failed job gives the rest back.
import t from "tap";
import { projectWithLiveKey } from "../support/billing.ts";
import { field } from "../support/troupe.ts";
import { ray2, sceneNanos, startVideoBudgetTroupe } from "../support/video-budget-troupe.ts";
import { startJob, watchJob } from "./job-suite.ts";

t.setTimeout(120_000);
const { luma, troupe, user, submitted } = await startVideoBudgetTroupe("video-budget", { VIDEO_NARRATION_MODEL: "tts-1", VIDEO_NARRATION_VOICE: "alloy" });

async function budgeted(name: string, limitNanos: number) {
  const p = await projectWithLiveKey(troupe, user.token, user.orgId, name);
  const put = await troupe.request("PUT", `/v1/projects/${p.projectId}/budget`, { token: user.token, body: { monthly_limit_usd: limitNanos / 1e9, hard_limit: true } });
  if (put.status !== 200) throw new Error(`budget: ${put.text}`);
  return p;
}

const liveCost = async (projectId: string): Promise<number> => {
  const report = await troupe.request("GET", `/v1/projects/${projectId}/usage`, { token: user.token });
  const cost = field(report.body, "live", "cost_nanos");
  if (typeof cost !== "number") throw new Error(`usage: ${report.text}`);
  return cost;
};

t.test("$2.10 with $0.70 spent: of 30 concurrent ray-2 jobs exactly 2 start, 28 are 402, the ledger ends at the limit", async (t) => {
  const p = await budgeted("burst", 3 * sceneNanos);
  const first = await startJob(troupe.request, p.liveKey, ray2("burst first"));
  t.equal((await watchJob(troupe.request, p.liveKey, first)).job.status, "completed");
  t.equal(await liveCost(p.projectId), sceneNanos, "$0.70 spent");

  const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => troupe.request("POST", "/v1/video/generate", { token: p.liveKey, body: ray2(`burst job ${i}`) })));
  const started = answers.filter((a) => a.status === 202).map((a) => String(field(a.body, "job_id")));
  const refused = answers.filter((a) => a.status === 402);
  t.equal(started.length, 2, "the two jobs the $1.40 left pays for start");
  t.equal(refused.length, 28, "every other job is 402");
  t.equal(field(refused[0]?.body, "error", "code"), "budget_exceeded");
  for (const id of started) t.equal((await watchJob(troupe.request, p.liveKey, id)).job.status, "completed");
  t.equal(submitted("burst job"), 2, "only the admitted jobs reached the provider");
  t.equal(await liveCost(p.projectId), 3 * sceneNanos, "the ledger ends at the limit, not over it");
});

t.test("a 10-scene job with $0.30 left is refused before any provider call; one that fits runs and bills each scene", async (t) => {
  const p = await budgeted("scenes", sceneNanos + 300_000_000);
  const first = await startJob(troupe.request, p.liveKey, ray2("scenes first"));
  t.equal((await watchJob(troupe.request, p.liveKey, first)).job.status, "completed");
  const scenes = Array.from({ length: 10 }, (_, i) => `scenes ten ${i}`);
  const res = await troupe.request("POST", "/v1/video/generate", { token: p.liveKey, body: ray2("ten", { scenes }) });
  t.equal(res.status, 402, res.text);
  t.match(String(field(res.body, "error", "message")), /may cost up to 7 USD/);
  t.equal(submitted("scenes ten"), 0, "no scene reached the provider");
  t.equal(await liveCost(p.projectId), sceneNanos, "nothing more billed");

  const roomy = await budgeted("scenes roomy", 3 * sceneNanos);
  const id = await startJob(troupe.request, roomy.liveKey, ray2("three", { scenes: ["roomy a", "roomy b", "roomy c"] }));
  t.equal((await watchJob(troupe.request, roomy.liveKey, id)).job.status, "completed");
  t.equal(await liveCost(roomy.projectId), 3 * sceneNanos, "three scenes billed, exactly the limit");
});

t.test("the narration is part of the estimate", async (t) => {
  const narration_text = "n".repeat(100); // 100 characters of tts-1: $0.0015
  const narrationNanos = 1_500_000;
  const short = await budgeted("narration short", sceneNanos + narrationNanos - 1);
  const refused = await troupe.request("POST", "/v1/video/generate", { token: short.liveKey, body: ray2("narrated short", { narration_text }) });
  t.equal(refused.status, 402, "one nano-dollar short of scene + narration");
  const exact = await budgeted("narration exact", sceneNanos + narrationNanos);
  const id = await startJob(troupe.request, exact.liveKey, ray2("narrated exact", { narration_text }));
  t.equal((await watchJob(troupe.request, exact.liveKey, id)).job.status, "completed");
  t.equal(await liveCost(exact.projectId), sceneNanos + narrationNanos, "scene and narration billed: the whole limit");
});

t.test("a cancelled job releases what it did not spend: the next job fits", async (t) => {
  const p = await budgeted("cancel", 2 * sceneNanos);
  luma.pollsBeforeDone = 1000;
  const id = await startJob(troupe.request, p.liveKey, ray2("cancel", { scenes: ["cancel a", "cancel b"] }));
  await watchJob(troupe.request, p.liveKey, id, 30_000, (j) => j.status === "processing");
  t.equal((await troupe.request("POST", "/v1/video/generate", { token: p.liveKey, body: ray2("cancel blocked") })).status, 402, "both scenes held");
  t.equal((await troupe.request("DELETE", `/v1/jobs/${id}`, { token: p.liveKey })).status, 200);
  luma.pollsBeforeDone = 1;
  const next = await waitFor202(p.liveKey, ray2("cancel next", { scenes: ["cancel next a", "cancel next b"] }));
  t.equal((await watchJob(troupe.request, p.liveKey, next)).job.status, "completed");
  t.equal(await liveCost(p.projectId), 2 * sceneNanos, "only the second job's scenes billed");
});

t.test("a failed job releases its unbilled scenes", async (t) => {
  const p = await budgeted("failed", 3 * sceneNanos);
  luma.outcomes.push("succeed", "fail");
  const id = await startJob(troupe.request, p.liveKey, ray2("failed", { scenes: ["failed a", "failed b", "failed c"] }));
  t.equal((await watchJob(troupe.request, p.liveKey, id)).job.status, "failed");
  const next = await waitFor202(p.liveKey, ray2("failed next", { scenes: ["failed next a", "failed next b"] }));
  t.equal((await watchJob(troupe.request, p.liveKey, next)).job.status, "completed");
  t.equal(await liveCost(p.projectId), 3 * sceneNanos, "one scene of the failed job, two of the next");
});

/** A job that should fit once a final job's release (its next step, right after it ends) went through. */
async function waitFor202(key: string, body: Record<string, unknown>): Promise<string> {
  let last = "";
  for (let i = 0; i < 40; i++) {
    const res = await troupe.request("POST", "/v1/video/generate", { token: key, body });
    if (res.status === 202) return String(field(res.body, "job_id"));
    last = `${res.status} ${res.text}`;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`never admitted: ${last}`);
}
