// Routing video segments (router.submitVideo/pollVideo/cancelVideo) over the
// real Runway and Luma adapters on their fakes: capability checks before any
// call (an image or not, durations), equivalent-model fallback, retries on
// 429, no fallback on 400, a breaker per provider that later segments
// respect, polls/cancels that go to the task's provider only, and findVideo
// (a submission whose answer was lost, looked up in Luma's list).
import t from "tap";
import { TroupeError } from "../../core/errors.ts";
import { Catalogue } from "../../providers/catalogue.ts";
import { createLumaAdapter } from "../../providers/luma/index.ts";
import { Router, type RouterOptions } from "../../providers/router.ts";
import { createRunwayAdapter } from "../../providers/runway/index.ts";
import { createSimulatedAdapter } from "../../providers/simulated/index.ts";
import type { ProviderAdapter } from "../../providers/types.ts";
import type { VideoImage } from "../../providers/video.ts";
import { assertVideoModelFits, longestClipSeconds, nearestDuration, offersDuration, takesImage, videoModelIdSchema } from "../../providers/video-routing.ts";
import { encodePng } from "../../media/png.ts";
import { startLumaFake, startRunwayFake, type VideoFake } from "../fakes/video-fakes.ts";
import { tmpdir } from "node:os";
import { loadConfig } from "../../gateway/config.ts";
import { createRouter } from "../../providers/index.ts";
import { join } from "node:path";

const runwayFake = await startRunwayFake("rw");
const lumaFake = await startLumaFake("lu");
const runway = createRunwayAdapter({ baseUrl: runwayFake.url, apiKey: "rw", pollIntervalMs: 5 });
const luma = createLumaAdapter({ baseUrl: lumaFake.url, apiKey: "lu", pollIntervalMs: 5 });
t.teardown(async () => {
  await runway.close?.();
  await luma.close?.();
  await runwayFake.close();
  await lumaFake.close();
});
const catalogue = Catalogue.load();
const image: VideoImage = { url: "https://troupe.example/v1/files/img", content_type: "image/png", bytes: encodePng(32, 18, () => [9, 9, 9]) };

function reset(...fakes: VideoFake[]) {
  for (const f of fakes) {
    f.apiFaults.length = 0;
    f.calls.length = 0;
    f.outcomes.length = 0;
    f.lost.clear();
    f.pollsBeforeDone = 0;
  }
}

function router(opts: Partial<RouterOptions> = {}): Router {
  reset(runwayFake, lumaFake);
  return new Router({
    catalogue,
    adapters: new Map<string, ProviderAdapter>([
      ["runway", runway],
      ["luma", luma],
      ["simulated", createSimulatedAdapter({ video: { delayMs: 0, cacheDir: join(tmpdir(), "troupe-video-router-test") } })],
    ]),
    timeoutMs: 5_000,
    maxAttempts: 3,
    backoff: { initialDelayMs: 5, maxDelayMs: 20 },
    ...opts,
  });
}

async function troupeError(p: Promise<unknown>): Promise<TroupeError> {
  const e = await p.then(() => undefined, (x: unknown) => x);
  if (!(e instanceof TroupeError)) throw new Error(`expected a TroupeError, got ${String(e)}`);
  return e;
}

t.test("auto picks the first capable real model: Runway for an image, Luma for text (gen4_turbo needs an image)", async (t) => {
  const r = router();
  const withImage = await r.submitVideo({ model: "ray-2", prompt: "p", duration_seconds: 5, image, routing_strategy: "auto" }, {});
  t.match(withImage, { provider: "luma", model: "ray-2" }, "a named model is tried first");
  const byCatalogue = await r.submitVideo({ model: "gen4_turbo", prompt: "p", duration_seconds: 7, image, routing_strategy: "auto" });
  t.match(byCatalogue, { provider: "runway", model: "gen4_turbo", duration_seconds: 5 }, "7 s → Runway's nearest (5)");
  const text = await troupeError(r.submitVideo({ model: "gen4_turbo", prompt: "p", duration_seconds: 5, routing_strategy: "auto" }));
  t.match(text, { code: "invalid_request", message: /only animates an image/ });
  t.equal(runwayFake.calls.filter((c) => c.method === "POST").length, 1, "refused before any call to Runway");
  const manualLuma = await r.submitVideo({ model: "ray-2", prompt: "text", duration_seconds: 10, routing_strategy: "manual" });
  t.match(manualLuma, { provider: "luma", duration_seconds: 9 }, "10 s → Luma's nearest (9)");
});

t.test("fallback: Runway failing → the equivalent Luma model, with Luma's duration", async (t) => {
  const r = router();
  runwayFake.apiFaults.push({ status: 500 }, { status: 500 }, { status: 500 });
  const task = await r.submitVideo({ model: "gen4_turbo", prompt: "fallback", duration_seconds: 10, image, routing_strategy: "auto" });
  t.match(task, { provider: "luma", model: "ray-2", duration_seconds: 9 });
  t.equal(lumaFake.submissions("fallback"), 1);
  t.match(lumaFake.calls[0]?.json, { duration: "9s" });
  // Simulated never stands in for a real model.
  runwayFake.apiFaults.push({ status: 500 }, { status: 500 }, { status: 500 });
  lumaFake.apiFaults.push({ status: 500 }, { status: 500 }, { status: 500 });
  const e = await troupeError(r.submitVideo({ model: "gen4_turbo", prompt: "nowhere", duration_seconds: 5, image, routing_strategy: "auto" }));
  t.match(e, { code: "provider_error" });
});

t.test("429 is retried on the same provider; 400 is not retried nor passed on; manual never falls back", async (t) => {
  const r = router();
  runwayFake.apiFaults.push({ status: 429, retryAfter: "0" });
  const retried = await r.submitVideo({ model: "gen4_turbo", prompt: "retry", duration_seconds: 5, image, routing_strategy: "manual" });
  t.equal(retried.provider, "runway");
  t.equal(runwayFake.calls.length, 2, "one 429, one success");
  runwayFake.apiFaults.push({ status: 400 });
  const refused = await troupeError(r.submitVideo({ model: "gen4_turbo", prompt: "bad", duration_seconds: 5, image, routing_strategy: "auto" }));
  t.match(refused, { code: "invalid_request", status: 400 });
  t.equal(lumaFake.calls.length, 0, "a request problem is not sent elsewhere");
  runwayFake.apiFaults.push({ status: 503 }, { status: 503 }, { status: 503 });
  const manual = await troupeError(r.submitVideo({ model: "gen4_turbo", prompt: "m", duration_seconds: 5, image, routing_strategy: "manual" }));
  t.match(manual, { code: "provider_error", details: { provider: "runway", upstream_status: 503, attempts: 3 } });
  t.equal(lumaFake.calls.length, 0);
});

t.test("a breaker per provider: once Runway's opens, later segments go straight to Luma; manual Runway is 503", async (t) => {
  const r = router({ breaker: { consecutiveFailures: 2, halfOpenAfterMs: 60_000 }, maxAttempts: 2 });
  runwayFake.apiFaults.push({ status: 500 }, { status: 500 });
  // Segment 0: Runway fails once (1/2), falls back to Luma.
  t.match(await r.submitVideo({ model: "gen4_turbo", prompt: "s0", duration_seconds: 5, image, routing_strategy: "auto" }), { provider: "luma" });
  // Segment 1: Runway fails again (2/2: open), Luma serves.
  t.match(await r.submitVideo({ model: "gen4_turbo", prompt: "s1", duration_seconds: 5, image, routing_strategy: "auto" }), { provider: "luma" });
  t.equal(r.healthOf("runway").state, "open");
  const runwayCalls = runwayFake.calls.length;
  t.match(await r.submitVideo({ model: "gen4_turbo", prompt: "s2", duration_seconds: 5, image, routing_strategy: "auto" }), { provider: "luma" });
  t.equal(runwayFake.calls.length, runwayCalls, "segment 2 did not touch Runway");
  t.equal(r.listModels("video").find((m) => m.id === "gen4_turbo")?.available, false);
  const manual = await troupeError(r.submitVideo({ model: "gen4_turbo", prompt: "s3", duration_seconds: 5, image, routing_strategy: "manual" }));
  t.match(manual, { code: "no_provider_available", status: 503, message: /circuit breaker open/ });
  t.ok(manual.retryAfterSeconds !== undefined && manual.retryAfterSeconds > 0, "Retry-After from the breaker");
});

t.test("polls and cancels go to the task's provider, also with its breaker open", async (t) => {
  const r = router({ breaker: { consecutiveFailures: 1, halfOpenAfterMs: 60_000 } });
  const task = await r.submitVideo({ model: "gen4_turbo", prompt: "poll me", duration_seconds: 5, image, routing_strategy: "manual" });
  r.healthOf("runway").breaker.isolate();
  runwayFake.pollsBeforeDone = 1;
  t.match(await r.pollVideo(task, {}), { state: "pending" });
  t.match(await r.pollVideo(task), { state: "succeeded", clip: { kind: "url" } });
  runwayFake.apiFaults.push({ status: 502 });
  t.match(await troupeError(r.pollVideo(task)), { code: "provider_error", details: { provider: "runway", upstream_status: 502 } });
  runwayFake.lost.add(task.task_id);
  t.same(await r.pollVideo(task), { state: "lost" });
  runwayFake.lost.clear();
  await r.cancelVideo(task);
  t.equal(runwayFake.tasks.get(task.task_id)?.cancelled, true);
  t.equal(lumaFake.calls.length, 0, "never another provider");
  const aborted = new AbortController();
  aborted.abort(new Error("job cancelled"));
  await t.rejects(r.pollVideo(task, { signal: aborted.signal }), /job cancelled/);
});

t.test("findVideo: the earliest Luma generation of exactly this request since the arming, through the pages of the list; none where the provider cannot list", async (t) => {
  const r = router();
  const request = { model: "ray-2", prompt: "cut off", duration_seconds: 5, routing_strategy: "manual" } as const;
  const since = Date.now();
  // Same prompt, other requests (a longer clip, an image), made before the one to find.
  await r.submitVideo({ ...request, duration_seconds: 9 });
  await r.submitVideo({ ...request, image });
  const first = await r.submitVideo(request);
  await r.submitVideo(request); // a later, second submission of the same request: not the one cut off
  for (let i = 0; i < 150; i++) await r.submitVideo({ ...request, prompt: `newer ${i}` });
  const calls = lumaFake.calls.length;
  t.same(await r.findVideo(request, since), { ...first, poll_after_ms: 5 }, "the first of the two, found on the second page");
  t.match(
    lumaFake.calls.slice(calls).map((c) => `${c.method} ${c.path}`),
    ["GET /dream-machine/v1/generations", "GET /dream-machine/v1/generations"],
    "two pages read, nothing submitted",
  );
  t.equal(await r.findVideo({ ...request, prompt: "never sent" }, since), undefined, "another prompt");
  t.equal(await r.findVideo(request, Date.now() + 60_000), undefined, "made before the arming");
  const withImage = await r.findVideo({ ...request, image }, since);
  t.match(withImage, { provider: "luma", model: "ray-2" });
  t.not(withImage?.task_id, first.task_id, "the keyframe is part of the request");
  t.equal(await r.findVideo({ model: "gen4_turbo", prompt: "cut off", duration_seconds: 5, image, routing_strategy: "manual" }, since), undefined, "Runway cannot list its tasks");
  t.equal(runwayFake.calls.length, 0);
  lumaFake.apiFaults.push({ status: 500 });
  t.match(await troupeError(r.findVideo(request, since)), { code: "provider_error" }, "a failed list is an error, not a miss");
});

t.test("cost routing orders equivalents by price per second", async (t) => {
  const r = router();
  t.match(await r.submitVideo({ model: "ray-2", prompt: "cheap", duration_seconds: 5, image, routing_strategy: "cost" }), { provider: "runway" }, "Runway is cheaper per second");
});

t.test("validation helpers for the jobs route", async (t) => {
  const schema = videoModelIdSchema(catalogue);
  t.same(schema.options, ["gen4_turbo", "ray-2", "simulated-video"]);
  t.match(schema.safeParse("gpt-4o").error?.issues[0]?.message, /text model and cannot serve video/);
  t.same(videoModelIdSchema(catalogue, false).options, ["ray-2", "simulated-video"], "text segments: models that need no image");
  const gen4 = catalogue.get("gen4_turbo")!;
  const ray = catalogue.get("ray-2")!;
  t.equal(nearestDuration(gen4, 8), 10, "8 → 10 (nearest)");
  t.equal(nearestDuration(gen4, 6), 5, "6 → 5 (nearest)");
  t.equal(nearestDuration(gen4, 7.5), 10, "7.5 is as near 5 as 10: the longer clip");
  t.equal(nearestDuration(ray, 7), 9, "7 is as near 5 as 9: the longer clip");
  t.equal(nearestDuration(ray, 1), 5);
  t.ok(offersDuration(ray, 9));
  t.notOk(offersDuration(ray, 10));
  t.ok(takesImage(gen4) && takesImage(ray));
  t.notOk(takesImage(catalogue.get("gpt-4o")!));
  t.equal(longestClipSeconds(catalogue), 10);
  t.throws(() => assertVideoModelFits(catalogue, "gen4_turbo", false, "scenes.0.model"), { code: "invalid_request", details: [{ path: "scenes.0.model" }] });
  t.throws(() => assertVideoModelFits(catalogue, "nope", true), { code: "invalid_request", details: [{ path: "body.model", message: /unknown model/ }] });
  t.doesNotThrow(() => assertVideoModelFits(catalogue, "gen4_turbo", true));
  t.throws(() => nearestDuration(catalogue.get("gpt-4o")!, 5), /no clip durations/);
});

t.test("configuration: a provider is available with its key, unavailable without; settings parsed once", async (t) => {
  const none = createRouter(loadConfig({}).providers);
  t.same(none.listModels("video").map((m) => [m.id, m.available]), [["gen4_turbo", false], ["ray-2", false], ["simulated-video", true]]);
  const cfg = loadConfig({ RUNWAY_API_KEY: "rw", RUNWAY_BASE_URL: runwayFake.url, LUMA_API_KEY: "lu", LUMA_BASE_URL: lumaFake.url, VIDEO_POLL_INTERVAL_MS: "1234", SIMULATED_VIDEO_DELAY_MS: "0" });
  t.match(cfg.providers.runway, { baseUrl: runwayFake.url, pollIntervalMs: 1234 });
  t.equal(cfg.providers.simulated.video.delayMs, 0);
  t.equal(loadConfig({}).providers.simulated.video.delayMs, 2000, "default: clips take 2 s");
  t.equal(loadConfig({}).providers.luma.baseUrl, "https://api.lumalabs.ai");
  const both = createRouter(cfg.providers);
  t.teardown(() => both.close());
  t.ok(both.listModels("video").every((m) => m.available));
  reset(runwayFake, lumaFake);
  const task = await both.submitVideo({ model: "ray-2", prompt: "configured", duration_seconds: 5, routing_strategy: "manual" });
  t.match(task, { provider: "luma", poll_after_ms: 1234 });
  t.throws(() => loadConfig({ LUMA_BASE_URL: "not a url" }), /LUMA_BASE_URL/);
  await none.close();
});
