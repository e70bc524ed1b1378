// Jobs against the Luma fake (real HTTP, Luma's wire format, real MP4s):
// a failing provider fails the job with an error; a task the provider lost
// is submitted again (the only resubmission); an image_url job animates the
// caller's image, then each clip's last frame; a cancel reaches the
// provider's task in flight; transient poll failures are ridden out.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import t from "tap";
import { encodePng } from "../../media/png.ts";
import type { UsageRecord } from "../../providers/usage.ts";
import { startLumaFake } from "../fakes/video-fakes.ts";
import { signup, startTestTroupe } from "../support/troupe.ts";
import { startJob, watchJob } from "./job-suite.ts";

t.setTimeout(120_000);
const luma = await startLumaFake("luma-key");
const usage: UsageRecord[] = [];
const troupe = await startTestTroupe(
  { LUMA_API_KEY: "luma-key", LUMA_BASE_URL: luma.url, VIDEO_POLL_INTERVAL_MS: "50", OUTBOUND_ALLOW_HOSTS: "127.0.0.1", JOB_WATCHDOG_MS: "1000" },
  { usage: { record: (u) => void usage.push(u) } },
);
const png = encodePng(64, 36, (x, y) => [x * 4, y * 7, 90]);
const images = createServer((_req, res) => res.writeHead(200, { "content-type": "image/png" }).end(png));
await new Promise<void>((r) => images.listen(0, "127.0.0.1", r));
t.teardown(async () => {
  await troupe.stop();
  await luma.close();
  images.close();
});
const a = await signup(troupe, "jobs-luma");
const billedFor = (id: string) => usage.filter((u) => u.request_id.startsWith(`job:${id}:segment:`)).map((u) => u.request_id).sort();

t.test("a clip the provider fails: the job fails with the provider's error, nothing billed for it", async (t) => {
  luma.outcomes.push("succeed", "fail");
  const id = await startJob(troupe.request, a.testKey, { prompt: "p", scenes: ["fail-ok scene", "fail-bad scene", "fail-never scene"] });
  const { job } = await watchJob(troupe.request, a.testKey, id);
  t.equal(job.status, "failed");
  t.equal(job.provider, "luma");
  t.equal(job.error?.code, "provider_error");
  t.match(job.error?.message, /segment 1/);
  t.same(job.segments.map((s) => s.status), ["completed", "failed", "cancelled"]);
  t.equal(luma.submissions("fail-never scene"), 0, "nothing after the failure is submitted");
  t.same(billedFor(id), [`job:${id}:segment:0`], "only the finished scene is billed");
});

t.test("a task the provider lost is submitted again, billed once", async (t) => {
  luma.pollsBeforeDone = 4;
  const id = await startJob(troupe.request, a.testKey, { prompt: "lost scene" });
  await watchJob(troupe.request, a.testKey, id, 30_000, (j) => j.status === "processing");
  const [task] = [...luma.tasks.values()].filter((x) => x.prompt === "lost scene");
  luma.lost.add(task!.id);
  const { job } = await watchJob(troupe.request, a.testKey, id);
  luma.pollsBeforeDone = 1;
  t.equal(job.status, "completed", JSON.stringify(job.error));
  t.equal(luma.submissions("lost scene"), 2, "resubmitted once the provider answered 404");
  t.same(billedFor(id), [`job:${id}:segment:0`]);
  t.equal(usage.find((u) => u.request_id === `job:${id}:segment:0`)?.units, 5, "billed for the clip seconds the model makes");
});

t.test("image_url: image_to_video, the first clip animates the image, the next one the previous clip's last frame", async (t) => {
  const image_url = `http://127.0.0.1:${(images.address() as AddressInfo).port}/cat.png`;
  const id = await startJob(troupe.request, a.testKey, { prompt: "p", image_url, scenes: ["img first", "img second"] });
  const { job } = await watchJob(troupe.request, a.testKey, id);
  t.equal(job.status, "completed", JSON.stringify(job.error));
  t.equal(job.type, "image_to_video");
  const bodies = ["img first", "img second"].map((p) => [...luma.tasks.values()].find((x) => x.prompt === p)?.body);
  const frames = bodies.map((b) => (b?.["keyframes"] as { frame0?: { url?: string } } | undefined)?.frame0?.url);
  t.match(frames[0], /\/v1\/files\/file_/, "the caller's image, re-hosted");
  t.match(frames[1], /\/v1\/files\/file_/, "the previous clip's last frame");
  t.not(frames[0], frames[1]);
  const first = await fetch(frames[0]!);
  t.same(Buffer.from(await first.arrayBuffer()), png, "the stored image is the caller's");
});

t.test("cancel reaches the provider's task in flight; that scene is not billed", async (t) => {
  luma.pollsBeforeDone = 1000;
  const id = await startJob(troupe.request, a.testKey, { prompt: "p", scenes: ["cancel me", "never me"] });
  await watchJob(troupe.request, a.testKey, id, 30_000, (j) => j.status === "processing");
  const res = await troupe.request("POST", `/v1/jobs/${id}/cancel`, { token: a.testKey });
  luma.pollsBeforeDone = 1;
  t.equal(res.status, 200);
  const task = [...luma.tasks.values()].find((x) => x.prompt === "cancel me");
  t.ok(task?.cancelled, "DELETE sent to the provider");
  t.ok(luma.calls.some((c) => c.method === "DELETE" && c.path.endsWith(task!.id)));
  t.equal(luma.submissions("never me"), 0);
  t.same(billedFor(id), []);
});

t.test("transient poll failures are retried, the job completes", async (t) => {
  luma.pollsBeforeDone = 2;
  const id = await startJob(troupe.request, a.testKey, { prompt: "flaky scene" });
  await watchJob(troupe.request, a.testKey, id, 30_000, (j) => j.status === "processing");
  luma.apiFaults.push({ status: 503 }, { status: 500 }, { status: 503 });
  const { job } = await watchJob(troupe.request, a.testKey, id);
  luma.pollsBeforeDone = 1;
  t.equal(job.status, "completed", JSON.stringify(job.error));
  t.equal(luma.submissions("flaky scene"), 1);
});
