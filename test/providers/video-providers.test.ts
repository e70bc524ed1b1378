// The Runway and Luma adapters against their fakes (real HTTP, the real
// wire formats): submit → polls → a real MP4 at the output URL; image and
// text segments; failed, cancelled and lost tasks; provider errors
// classified so the router retries (429, 5xx) or falls back (401) or
// refuses at once (400).
import t from "tap";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isProviderCallError, ProviderCallError } from "../../providers/errors.ts";
import { createLumaAdapter } from "../../providers/luma/index.ts";
import { createRunwayAdapter, runwayApiVersion } from "../../providers/runway/index.ts";
import type { ProviderAdapter } from "../../providers/types.ts";
import type { VideoAdapter, VideoImage, VideoTask, VideoTaskStatus } from "../../providers/video.ts";
import { probeMedia } from "../../media/video-compose.ts";
import { encodePng } from "../../media/png.ts";
import { startLumaFake, startRunwayFake, type VideoFake } from "../fakes/video-fakes.ts";

const dir = mkdtempSync(join(tmpdir(), "troupe-video-providers-"));
const runwayFake = await startRunwayFake("rw-key");
const lumaFake = await startLumaFake("luma-key");
const runway = createRunwayAdapter({ baseUrl: runwayFake.url, apiKey: "rw-key", pollIntervalMs: 7 });
const luma = createLumaAdapter({ baseUrl: lumaFake.url, apiKey: "luma-key", pollIntervalMs: 9 });
t.teardown(async () => {
  await runway.close?.();
  await luma.close?.();
  await runwayFake.close();
  await lumaFake.close();
  rmSync(dir, { recursive: true, force: true });
});

const signal = () => AbortSignal.timeout(5_000);
const image: VideoImage = { url: "https://troupe.example/v1/files/abc", content_type: "image/png", bytes: encodePng(64, 36, (x) => [x * 4, 0, 0]) };
const video = (a: ProviderAdapter): VideoAdapter => a.video!;

async function failure(p: Promise<unknown>): Promise<ProviderCallError> {
  const e = await p.then(() => undefined, (x: unknown) => x);
  if (!isProviderCallError(e)) throw new Error(`expected a ProviderCallError, got ${String(e)}`);
  return e;
}

async function pollUntilDone(v: VideoAdapter, task: VideoTask): Promise<{ states: string[]; last: VideoTaskStatus }> {
  const states: string[] = [];
  for (let i = 0; i < 10; i++) {
    const s = await v.poll(task, signal());
    states.push(s.state);
    if (s.state !== "pending" && s.state !== "running") return { states, last: s };
  }
  throw new Error("never finished");
}

async function downloadAndProbe(url: string) {
  const res = await fetch(url);
  const path = join(dir, `${Math.random()}.mp4`);
  writeFileSync(path, Buffer.from(await res.arrayBuffer()));
  return { contentType: res.headers.get("content-type"), probe: await probeMedia(path) };
}

const cases: { name: string; adapter: ProviderAdapter; fake: VideoFake; model: string; durations: [number, number]; interval: number }[] = [
  { name: "runway", adapter: runway, fake: runwayFake, model: "gen4_turbo", durations: [5, 10], interval: 7 },
  { name: "luma", adapter: luma, fake: lumaFake, model: "ray-2", durations: [5, 9], interval: 9 },
];

for (const c of cases) {
  const v = video(c.adapter);
  const reset = () => {
    c.fake.apiFaults.length = 0;
    c.fake.outcomes.length = 0;
    c.fake.pollsBeforeDone = 2;
    c.fake.calls.length = 0;
  };

  t.test(`${c.name}: image segment → pending → running → a real MP4 at the output URL`, async (t) => {
    reset();
    const task = await v.submit({ model: c.model, prompt: `a fox, ${c.name}`, duration_seconds: c.durations[1], image }, signal());
    t.match(task, { provider: c.name, model: c.model, duration_seconds: c.durations[1], poll_after_ms: c.interval });
    const submit = c.fake.calls[0]!;
    if (c.name === "runway") {
      t.equal(submit.path, "/v1/image_to_video");
      t.equal(submit.headers["x-runway-version"], runwayApiVersion);
      t.match(submit.json, { model: "gen4_turbo", promptText: "a fox, runway", ratio: "1280:720", duration: 10, promptImage: /^data:image\/png;base64,/ });
    } else {
      t.equal(submit.path, "/dream-machine/v1/generations");
      t.match(submit.json, { model: "ray-2", prompt: "a fox, luma", duration: "9s", resolution: "720p", keyframes: { frame0: { type: "image", url: image.url } } });
    }
    t.equal(c.fake.submissions(`a fox, ${c.name}`), 1);
    const { states, last } = await pollUntilDone(v, task);
    t.same(states, ["pending", "running", "succeeded"]);
    if (last.state !== "succeeded" || last.clip.kind !== "url") throw new Error("expected a URL clip");
    const { contentType, probe } = await downloadAndProbe(last.clip.url);
    t.equal(contentType, "video/mp4");
    t.ok(probe.has_video && probe.duration_seconds > 0.9, "a playable clip");
  });

  t.test(`${c.name}: text segment`, async (t) => {
    reset();
    if (c.name === "runway") {
      // gen4_turbo has no text_to_video: the fake refuses like Runway, as a request problem (no fallback helps).
      const e = await failure(v.submit({ model: "gen4_turbo", prompt: "text only", duration_seconds: 5 }, signal()));
      t.match(e, { status: 400, fallbackable: false, retryable: false });
      t.equal(c.fake.calls[0]?.path, "/v1/text_to_video");
      const ok = await v.submit({ model: "gen4.5", prompt: "text only", duration_seconds: 5 }, signal());
      t.ok(ok.task_id);
      t.notOk(c.fake.calls[1]?.json && "promptImage" in c.fake.calls[1].json, "no promptImage on text_to_video");
    } else {
      await v.submit({ model: "ray-2", prompt: "text only", duration_seconds: 5 }, signal());
      t.notOk(c.fake.calls[0]?.json && "keyframes" in c.fake.calls[0].json, "no keyframes without an image");
    }
  });

  t.test(`${c.name}: a failed task, a cancelled task, a lost task`, async (t) => {
    reset();
    c.fake.pollsBeforeDone = 0;
    c.fake.outcomes.push("fail");
    const failed = await v.submit({ model: c.model, prompt: "forbidden", duration_seconds: c.durations[0], image }, signal());
    const f = await v.poll(failed, signal());
    t.match(f, { state: "failed", code: c.name === "runway" ? "SAFETY.INPUT.TEXT" : "provider_failed", message: /moderation|not allowed/ });

    c.fake.pollsBeforeDone = 5;
    const cancelled = await v.submit({ model: c.model, prompt: "stop me", duration_seconds: c.durations[0], image }, signal());
    await v.cancel(cancelled, signal());
    t.equal(c.fake.tasks.get(cancelled.task_id)?.cancelled, true, "DELETE reached the provider");
    t.match(await v.poll(cancelled, signal()), { state: "failed" });

    const lost = await v.submit({ model: c.model, prompt: "forget me", duration_seconds: c.durations[0], image }, signal());
    c.fake.lost.add(lost.task_id);
    t.same(await v.poll(lost, signal()), { state: "lost" }, "404 on poll is lost");
    await t.resolves(v.cancel(lost, signal()), "cancelling a task the provider no longer knows is a no-op (its 404 is not an error)");
  });

  t.test(`${c.name}: provider errors are classified for the router`, async (t) => {
    reset();
    const req = { model: c.model, prompt: "busy", duration_seconds: c.durations[0], image };
    c.fake.apiFaults.push({ status: 429, retryAfter: "2" });
    t.match(await failure(v.submit(req, signal())), { status: 429, retryable: true, fallbackable: true, retryAfter: "2" });
    c.fake.apiFaults.push({ status: 500 });
    t.match(await failure(v.submit(req, signal())), { status: 500, retryable: true });
    c.fake.apiFaults.push({ status: 400 });
    t.match(await failure(v.submit(req, signal())), { status: 400, retryable: false, fallbackable: false });
    const task = await v.submit(req, signal());
    c.fake.apiFaults.push({ status: 503 });
    t.match(await failure(v.poll(task, signal())), { status: 503, retryable: true });
    c.fake.apiFaults.push({ status: 500 });
    t.match(await failure(v.cancel(task, signal())), { status: 500 });
    const wrongKey = c.name === "runway" ? createRunwayAdapter({ baseUrl: c.fake.url, apiKey: "nope", pollIntervalMs: 1 }) : createLumaAdapter({ baseUrl: c.fake.url, apiKey: "nope", pollIntervalMs: 1 });
    t.match(await failure(video(wrongKey).submit(req, signal())), { status: 401, retryable: false, fallbackable: true });
    await wrongKey.close?.();
  });
}

t.test("an answer that is not the provider's format is a protocol failure", async (t) => {
  const { startFake, sendJson } = await import("../fakes/fake-server.ts");
  const odd = await startFake((ctx) => sendJson(ctx, 200, ctx.req.method === "POST" ? { id: "t1", state: "queued" } : { id: "t1", status: "SUCCEEDED", output: [] }), (_s, m) => ({ error: m }));
  t.teardown(() => odd.close());
  const rw = createRunwayAdapter({ baseUrl: odd.url, apiKey: "k", pollIntervalMs: 1 });
  const lu = createLumaAdapter({ baseUrl: odd.url, apiKey: "k", pollIntervalMs: 1 });
  t.teardown(async () => {
    await rw.close?.();
    await lu.close?.();
  });
  const task = await rw.video!.submit({ model: "gen4_turbo", prompt: "p", duration_seconds: 5, image }, signal());
  t.match(await failure(rw.video!.poll(task, signal())), { kind: "protocol", message: /without an output URL/ });
  t.match(await failure(lu.video!.poll(task, signal())), { kind: "protocol" });
});
