// kill -9 mid-job on the embedded host: after a restart on the same data
// directory every job continues from its last recorded step and completes;
// no segment is submitted twice to the provider (counted in the Luma fake,
// which lives in this test process and outlives the killed gateway) and
// each scene is billed exactly once (read back from the ledger afterwards).
// The second test kills the process at the worst moment: Luma has accepted a
// submission whose answer never arrives; after the restart the job finds
// that generation in Luma's list instead of submitting again.
import t from "tap";
import { EmbeddedLedgerStore } from "../../tenancy/embedded-ledger-store.ts";
import { startLumaFake } from "../fakes/video-fakes.ts";
import { gatewayProcess, killAndWait } from "../support/gateway-process.ts";
import { waitFor } from "../support/net.ts";
import { request, signup } from "../support/troupe.ts";
import { startJob, watchJob, type JobView } from "./job-suite.ts";
import { projectUsage } from "./usage-reader.ts";

t.setTimeout(180_000);
const luma = await startLumaFake("luma-key");
luma.pollsBeforeDone = 3;
const { base, dataDir, start } = await gatewayProcess("troupe-kill-jobs-", {
  LUMA_API_KEY: "luma-key",
  LUMA_BASE_URL: luma.url,
  VIDEO_POLL_INTERVAL_MS: "150",
  OUTBOUND_ALLOW_HOSTS: "127.0.0.1",
  JOB_WATCHDOG_MS: "1000",
});
let child = await start();
t.teardown(async () => {
  child.kill("SIGKILL");
  await luma.close();
});

/** The jobs each test saw through a kill, audited in the ledger at the end. */
const audits: { projectId: string; jobs: { id: string; scenes: string[] }[]; narrated: boolean }[] = [];

t.test("jobs killed mid-way complete after a restart: no segment submitted twice, each scene billed once", async (t) => {
  const r = (m: string, p: string, o?: Parameters<typeof request>[3]) => request(base, m, p, o);
  const user = await signup({ request: r }, "kill-jobs");
  const jobs: { id: string; scenes: string[] }[] = [];
  for (let j = 0; j < 3; j++) {
    const scenes = [0, 1, 2].map((s) => `job ${j} scene ${s}`);
    jobs.push({ id: await startJob(r, user.testKey, { prompt: `job ${j}`, scenes, narration_text: `narration of job ${j}` }), scenes });
  }
  // Mid-job: the first scene of some job is done, the others are not.
  await watchJob(r, user.testKey, jobs[0]!.id, 60_000, (job) => job.segments[0]?.status === "completed");
  const before = await Promise.all(jobs.map(async (j) => (await r("GET", `/v1/jobs/${j.id}`, { token: user.testKey })).body as JobView));
  t.ok(before.every((j) => j.status !== "completed"), `killed mid-job: ${before.map((j) => j.segments.map((s) => s.status[0]).join("")).join(" ")}`);
  await killAndWait(child, "SIGKILL");

  child = await start();
  for (const j of jobs) {
    const { job } = await watchJob(r, user.testKey, j.id, 90_000);
    t.equal(job.status, "completed", `job ${j.id}: ${JSON.stringify(job.error)}`);
    t.ok(job.result_url, "a result");
    for (const scene of j.scenes) t.equal(luma.submissions(scene), 1, `"${scene}" submitted once`);
  }
  audits.push({ projectId: user.projectId, jobs, narrated: true });
});

t.test("killed after Luma accepted a submission but before its answer arrived: the restarted job finds the generation and polls it, nothing submitted twice", async (t) => {
  const r = (m: string, p: string, o?: Parameters<typeof request>[3]) => request(base, m, p, o);
  const user = await signup({ request: r }, "kill-unanswered");
  const scenes = ["cut-off first scene", "cut-off second scene"];
  luma.unanswered.add(scenes[1]!);
  const listsBefore = luma.calls.filter((c) => c.method === "GET" && c.path === "/dream-machine/v1/generations").length;
  const id = await startJob(r, user.testKey, { prompt: "cut off", scenes });
  await waitFor(async () => luma.submissions(scenes[1]!) === 1, 60_000, "the second scene's submission to reach Luma");
  const lists = () => luma.calls.filter((c) => c.method === "GET" && c.path === "/dream-machine/v1/generations").length - listsBefore;
  t.equal(lists(), 0, "the first submissions went straight to Luma");
  await killAndWait(child, "SIGKILL");
  luma.unanswered.clear();

  child = await start();
  const { job } = await watchJob(r, user.testKey, id, 90_000);
  t.equal(job.status, "completed", JSON.stringify(job.error));
  for (const scene of scenes) t.equal(luma.submissions(scene), 1, `"${scene}" submitted once`);
  t.ok(lists() >= 1, "the restarted job read Luma's list");
  audits.push({ projectId: user.projectId, jobs: [{ id, scenes }], narrated: false });
});

t.test("each scene billed exactly once (the ledger, read after a graceful stop)", async (t) => {
  await killAndWait(child, "SIGTERM");

  const store = new EmbeddedLedgerStore(dataDir);
  try {
    t.equal(audits.length, 2, "both kills were audited");
    for (const audit of audits) {
      const usage = await projectUsage(store, audit.projectId);
      for (const j of audit.jobs) {
        const ids = usage.filter((u) => u.request_id.startsWith(`job:${j.id}:segment:`)).map((u) => u.request_id).sort();
        t.same(ids, j.scenes.map((_, s) => `job:${j.id}:segment:${s}`), "each scene billed exactly once");
        t.equal(usage.filter((u) => u.request_id === `job:${j.id}:narration`).length, audit.narrated ? 1 : 0, "the narration billed once");
      }
    }
  } finally {
    await store.close();
  }
});
