// The official `openai` SDK (7.57, unmodified but for baseURL and apiKey)
// against /openai/v1/videos, backed by Troupe's video jobs on the simulated
// provider (real MP4s from ffmpeg): create (the SDK's multipart) → poll →
// downloadContent, list, delete → NotFoundError, a reference image upload,
// scopes and the budget refusal in the SDK's error classes.
import { mkdtempSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import OpenAI, { toFile } from "openai";
import { probeMedia } from "../../../media/video-compose.ts";
import type { UsageRecord } from "../../../providers/usage.ts";
import { field, signup, startTestTroupe, str } from "../../support/troupe.ts";
import { encodePng } from "../../../media/png.ts";
import { eventually, projectWithLiveKey, startFakeOpenAI } from "../../support/billing.ts";

t.setTimeout(120_000);
const usage: UsageRecord[] = [];
const troupe = await startTestTroupe(
  { SIMULATED_VIDEO_DELAY_MS: "300", SIMULATED_VIDEO_DIR: mkdtempSync(join(tmpdir(), "troupe-simvid-")), JOB_WATCHDOG_MS: "2000" },
  { usage: { record: (u) => void usage.push(u) } },
);
t.teardown(() => troupe.stop());
const user = await signup(troupe, "openai-videos");
const baseURL = `http://127.0.0.1:${troupe.port}/openai/v1`;
const client = new OpenAI({ baseURL, apiKey: user.testKey, maxRetries: 0 });

/** OpenAI's SDK types seconds as "4" | "8" | "12" (Sora's); any whole number the catalogue model makes is taken here. */
const oneSecond = "1" as "4";

async function poll(id: string, timeoutMs = 60_000): Promise<OpenAI.Videos.Video> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const video = await client.videos.retrieve(id);
    if (video.status === "completed" || video.status === "failed") return video;
    if (Date.now() > deadline) throw new Error(`video ${id} still ${video.status}`);
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
}

t.test("create → poll → downloadContent: an MP4 of the asked seconds, billed as /v1 bills a scene; the same job on /v1", async (t) => {
  const created = await client.videos.create({ model: "simulated-video", prompt: "a paper boat on a pond", seconds: "4", size: "1280x720" });
  t.match(created, { object: "video", status: "queued", model: "simulated-video", seconds: "4", size: "1280x720", prompt: "a paper boat on a pond", progress: 0, error: null, completed_at: null, expires_at: null, remixed_from_video_id: null });
  t.type(created.created_at, "number");
  const busy = await client.videos.downloadContent(created.id).catch((e: unknown) => e);
  t.type(busy, OpenAI.ConflictError, "no content before it completes");

  const done = await poll(created.id);
  t.equal(done.status, "completed", JSON.stringify(done.error));
  t.equal(done.progress, 100);
  t.ok(done.completed_at !== null && done.completed_at >= done.created_at);

  const content = await client.videos.downloadContent(created.id);
  t.equal(content.headers.get("content-type"), "video/mp4");
  const dir = await mkdtemp(join(tmpdir(), "troupe-openai-video-"));
  try {
    await writeFile(join(dir, "v.mp4"), Buffer.from(await content.arrayBuffer()));
    const probe = await probeMedia(join(dir, "v.mp4"));
    t.ok(probe.has_video, "a video stream");
    t.ok(Math.abs(probe.duration_seconds - 4) < 0.5, `lasts the 4 s asked: ${probe.duration_seconds}`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  t.match(usage.filter((u) => u.request_id === `job:${created.id}:segment:0`), [{ category: "video", model: "simulated-video", provider: "simulated", units: 4 }], "one scene billed like a /v1 job");
  const v1 = await troupe.request("GET", `/v1/jobs/${created.id}`, { token: user.testKey });
  t.equal(v1.status, 200, "the video is a Troupe job");
  t.equal(field(v1.body, "status"), "completed");

  const thumbnail = await client.videos.downloadContent(created.id, { variant: "thumbnail" }).catch((e: unknown) => e);
  t.type(thumbnail, OpenAI.BadRequestError, "no thumbnails are made");
  t.equal((thumbnail as InstanceType<typeof OpenAI.BadRequestError>).param, "variant");
});

t.test("list: OpenAI's page shape, newest first, after= pages on; the SDK's auto-pagination walks them", async (t) => {
  const a = await client.videos.create({ model: "simulated-video", prompt: "first", seconds: oneSecond });
  const b = await client.videos.create({ model: "simulated-video", prompt: "second", seconds: oneSecond });
  const page = await client.videos.list({ limit: 1 });
  t.same(page.data.map((v) => v.id), [b.id], "newest first");
  t.equal(page.has_more, true);
  const next = await client.videos.list({ limit: 1, after: b.id });
  t.same(next.data.map((v) => v.id), [a.id], "after the given id");
  const all: string[] = [];
  for await (const v of client.videos.list({ limit: 2 })) all.push(v.id);
  t.ok(all.indexOf(b.id) < all.indexOf(a.id) && all.indexOf(a.id) >= 0, "auto-pagination through after=last_id");
  const raw = await fetch(`${baseURL}/videos?limit=1`, { headers: { authorization: `Bearer ${user.testKey}` } });
  const body = (await raw.json()) as Record<string, unknown>;
  t.same(Object.keys(body).sort(), ["data", "first_id", "has_more", "last_id", "object"]);
  t.equal(body["object"], "list");
  await poll(a.id);
  await poll(b.id);
});

t.test("delete: video.deleted, then retrieve, content and a second delete are NotFoundError; /v1 sees it gone; an unfinished one is cancelled", async (t) => {
  const done = await client.videos.create({ model: "simulated-video", prompt: "to be deleted", seconds: oneSecond });
  await poll(done.id);
  const resultUrl = str((await troupe.request("GET", `/v1/jobs/${done.id}`, { token: user.testKey })).body, "result_url");
  const deleted = await client.videos.delete(done.id);
  t.same(deleted, { id: done.id, object: "video.deleted", deleted: true });
  for (const call of [() => client.videos.retrieve(done.id), () => client.videos.downloadContent(done.id), () => client.videos.delete(done.id)]) {
    const e = await call().catch((e: unknown) => e);
    t.type(e, OpenAI.NotFoundError);
  }
  t.equal((await troupe.request("GET", `/v1/jobs/${done.id}`, { token: user.testKey })).status, 404);
  t.equal((await fetch(resultUrl)).status, 404, "the MP4 is gone from the file store");

  const running = await client.videos.create({ model: "simulated-video", prompt: "cut short", seconds: oneSecond });
  t.same(await client.videos.delete(running.id), { id: running.id, object: "video.deleted", deleted: true });
  t.type(await client.videos.retrieve(running.id).catch((e: unknown) => e), OpenAI.NotFoundError);
  const unknown = await client.videos.retrieve("video_123").catch((e: unknown) => e);
  t.type(unknown, OpenAI.NotFoundError, "an id that is not ours");
});

t.test("input_reference: an uploaded image starts an image_to_video job", async (t) => {
  const image = encodePng(64, 36, () => [200, 80, 40]);
  const created = await client.videos.create({ model: "simulated-video", prompt: "the square drifts", seconds: oneSecond, input_reference: await toFile(image, "start.png", { type: "image/png" }) });
  const done = await poll(created.id);
  t.equal(done.status, "completed", JSON.stringify(done.error));
  t.equal(field((await troupe.request("GET", `/v1/jobs/${created.id}`, { token: user.testKey })).body, "type"), "image_to_video");
  const text = await client.videos.create({ model: "simulated-video", prompt: "x", input_reference: await toFile(Buffer.from("not an image"), "a.txt", { type: "text/plain" }) }).catch((e: unknown) => e);
  t.type(text, OpenAI.BadRequestError);
  t.equal((text as InstanceType<typeof OpenAI.BadRequestError>).param, "input_reference");
});

t.test("refusals in the SDK's classes: bad seconds (400 naming it), unknown model (404), a chat model (400), no video scope (403)", async (t) => {
  const badSeconds = await client.videos.create({ model: "simulated-video", prompt: "x", seconds: "99" as "4" }).catch((e: unknown) => e);
  t.type(badSeconds, OpenAI.BadRequestError);
  t.equal((badSeconds as InstanceType<typeof OpenAI.BadRequestError>).param, "seconds");
  t.type(await client.videos.create({ model: "sora-9", prompt: "x" }).catch((e: unknown) => e), OpenAI.NotFoundError);
  const chat = await client.videos.create({ model: "gpt-4.1", prompt: "x" }).catch((e: unknown) => e);
  t.type(chat, OpenAI.BadRequestError);
  t.equal((chat as InstanceType<typeof OpenAI.BadRequestError>).param, "model");

  const scoped = await troupe.request("POST", `/v1/environments/${user.developmentEnvId}/api-keys`, { token: user.token, body: { name: "chat only", scopes: ["chat"] } });
  const chatOnly = new OpenAI({ baseURL, apiKey: str(scoped.body, "key"), maxRetries: 0 });
  for (const call of [() => chatOnly.videos.create({ model: "simulated-video", prompt: "x" }), () => chatOnly.videos.list()]) {
    t.type(await call().catch((e: unknown) => e), OpenAI.PermissionDeniedError);
  }

});

t.test("a hard budget: once spent, create is 429 insufficient_quota (the SDK's RateLimitError) and no job starts", async (t) => {
  // A Troupe whose usage goes to the ledger, as in production, so admission sees what was spent
  // (a chat call on the OpenAI fake spends it: the simulated video model is free).
  const openai = await startFakeOpenAI();
  const ledgered = await startTestTroupe({}, { router: openai.router() });
  t.teardown(async () => {
    await ledgered.stop();
    await openai.fake.close();
  });
  const owner = await signup(ledgered, "openai-videos-budget");
  const p = await projectWithLiveKey(ledgered, owner.token, owner.orgId, "video-budget");
  const put = await ledgered.request("PUT", `/v1/projects/${p.projectId}/budget`, { token: owner.token, body: { monthly_limit_usd: 0.000001, hard_limit: true } });
  t.equal(put.status, 200, put.text);
  const live = new OpenAI({ baseURL: `http://127.0.0.1:${ledgered.port}/openai/v1`, apiKey: p.liveKey, maxRetries: 0 });
  await live.chat.completions.create({ model: "gpt-4.1-mini", messages: [{ role: "user", content: "spend the budget" }] });
  const refused = await eventually(
    () => live.videos.create({ model: "simulated-video", prompt: "over budget" }).catch((e: unknown) => e),
    (e) => e instanceof OpenAI.RateLimitError,
  );
  t.type(refused, OpenAI.RateLimitError, "OpenAI's exhausted quota");
  t.equal((refused as InstanceType<typeof OpenAI.RateLimitError>).code, "insufficient_quota");
  t.same(field((await ledgered.request("GET", "/v1/jobs?limit=100", { token: p.liveKey })).body, "data"), [], "no job started");
});
