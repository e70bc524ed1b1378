// The router's video operations (providers/router-video.ts, through
// Router.submitVideo/pollVideo/cancelVideo/findVideo) in process, over video
// adapter doubles that record each call and answer, throw or hang as
// scripted. What it proves:
// - a segment needs a positive duration; it is planned with or without its
//   image (a model that needs an image is refused without one); each
//   provider is asked for the model's upstream name and the offered duration
//   nearest the request, never the routing strategy; the task names the
//   catalogue model and provider that accepted it and that duration; a
//   failing provider falls back to an equivalent model elsewhere;
// - polls and cancels go to the task's provider only (its breaker open or
//   not), within the attempt deadline, without fallback; a provider that is
//   not configured, or makes no video, is no_provider_available; failures
//   come back as provider_error/provider_timeout with one attempt counted,
//   Troupe errors and the client's abort as they are; the attempt's signal
//   is left alone once answered and aborted once given up;
// - find asks, in routing order, each provider that can list its tasks,
//   and answers the first task found, named like a submitted one.
// Fast on purpose: a mutation run runs this file once per mutant.
import t from "tap";
import { TroupeError } from "../../core/errors.ts";
import { Catalogue } from "../../providers/catalogue.ts";
import { ProviderCallError } from "../../providers/errors.ts";
import { Router, type RouterOptions } from "../../providers/router.ts";
import type { RoutedVideoRequest } from "../../providers/router-video.ts";
import type { ProviderAdapter } from "../../providers/types.ts";
import type { VideoAdapter, VideoImage, VideoSegmentRequest, VideoTask, VideoTaskStatus } from "../../providers/video.ts";
import { catalogueModel } from "../support/catalogue-model.ts";
import { rejectedWith } from "../support/thrown-by.ts";

const model = catalogueModel;

// gen4_turbo (runway, 5 or 10 s) needs an image; ray-2 (luma, 5 or 9 s) is called by another name upstream;
// "pika-1" (pika, 4 or 8 s) takes an image or not. All three are medium: equivalents of one another.
const catalogue = new Catalogue([
  model("gen4_turbo"),
  { ...model("ray-2"), upstream_model: "ray-2-720p" },
  { ...model("ray-2"), id: "pika-1", provider: "pika", capabilities: { durations: [4, 8], image_input: "optional" } },
]);

/** What a scripted call does: answer this value, throw this error, or hang until its signal aborts. */
type Outcome<T> = T | Error | "hang";

function play<T>(outcome: Outcome<T> | undefined, fallback: T, signal: AbortSignal): Promise<T> {
  if (outcome === "hang") return new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
  if (outcome instanceof Error) return Promise.reject(outcome);
  return Promise.resolve(outcome === undefined ? fallback : outcome);
}

/** A provider's video adapter: each call recorded with its signal, answers scripted per method (past the script: a plain answer). */
class VideoDouble implements VideoAdapter {
  readonly provider: string;
  readonly submitted: { request: VideoSegmentRequest; signal: AbortSignal }[] = [];
  readonly polled: { task: VideoTask; signal: AbortSignal }[] = [];
  readonly cancelled: VideoTask[] = [];
  readonly found: { request: VideoSegmentRequest; sinceMs: number }[] = [];
  submits: Outcome<VideoTask>[] = [];
  polls: Outcome<VideoTaskStatus>[] = [];
  finds: Outcome<VideoTask | undefined>[] = [];
  constructor(provider: string) {
    this.provider = provider;
  }
  submit(request: VideoSegmentRequest, signal: AbortSignal): Promise<VideoTask> {
    this.submitted.push({ request, signal });
    return play(this.submits.shift(), upstreamTask(`${this.provider}-task`), signal);
  }
  poll(task: VideoTask, signal: AbortSignal): Promise<VideoTaskStatus> {
    this.polled.push({ task, signal });
    return play(this.polls.shift(), { state: "running", progress: 0.5, poll_after_ms: 1_000 }, signal);
  }
  async cancel(task: VideoTask): Promise<void> {
    this.cancelled.push(task);
  }
}

/** A double that can also list its tasks (find). */
class ListingVideoDouble extends VideoDouble {
  find(request: VideoSegmentRequest, sinceMs: number, signal: AbortSignal): Promise<VideoTask | undefined> {
    this.found.push({ request, sinceMs });
    return play(this.finds.shift(), undefined, signal);
  }
}

/** A task as an adapter returns it: the router replaces its provider, model and duration. */
function upstreamTask(id: string): VideoTask {
  return { provider: "upstream", model: "upstream-model", task_id: id, poll_after_ms: 700, duration_seconds: 99 };
}

const image: VideoImage = { url: "https://troupe.example/v1/files/img", content_type: "image/png", bytes: new Uint8Array([1, 2, 3]) };

interface Setup {
  router: Router;
  runway: VideoDouble;
  luma: ListingVideoDouble;
  pika: ListingVideoDouble;
}

function setup(opts: Partial<RouterOptions> = {}): Setup {
  const runway = new VideoDouble("runway");
  const luma = new ListingVideoDouble("luma");
  const pika = new ListingVideoDouble("pika");
  const router = new Router({
    catalogue,
    adapters: new Map<string, ProviderAdapter>([
      ["runway", { provider: "runway", video: runway }],
      ["luma", { provider: "luma", video: luma }],
      ["pika", { provider: "pika", video: pika }],
    ]),
    timeoutMs: 2_000,
    maxAttempts: 3,
    backoff: { initialDelayMs: 1, maxDelayMs: 1 },
    random: () => 1,
    ...opts,
  });
  return { router, runway, luma, pika };
}

function task(provider: string, id = "t-1"): VideoTask {
  return { provider, model: provider === "runway" ? "gen4_turbo" : "ray-2", task_id: id, poll_after_ms: 500, duration_seconds: 5 };
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

const withImage: RoutedVideoRequest = { model: "gen4_turbo", prompt: "a cat", duration_seconds: 9, image, routing_strategy: "auto" };

t.test("a segment needs a positive duration, refused before any call", async (t) => {
  const s = setup();
  for (const seconds of [0, -1, Number.NaN]) {
    const e = await rejectedWith(s.router.submitVideo({ ...withImage, duration_seconds: seconds }));
    t.equal(e.code, "invalid_request", `${seconds}`);
    t.same(e.details, [{ path: "duration_seconds", message: "must be a positive number of seconds" }]);
  }
  t.equal(s.runway.submitted.length + s.luma.submitted.length + s.pika.submitted.length, 0);
  const short = await s.router.submitVideo({ ...withImage, duration_seconds: 0.5 });
  t.equal(short.duration_seconds, 5, "half a second: the nearest clip the model makes");
});

t.test("the accepting provider is asked for the upstream model and the nearest offered duration; the task names the catalogue's", async (t) => {
  const s = setup();
  const res = await s.router.submitVideo(withImage);
  t.strictSame(res, { provider: "runway", model: "gen4_turbo", task_id: "runway-task", poll_after_ms: 700, duration_seconds: 10 });
  t.equal(s.runway.submitted.length, 1);
  t.strictSame(s.runway.submitted[0]?.request, { model: "gen4_turbo", prompt: "a cat", duration_seconds: 10, image }, "9 s: 10, the nearer; no routing strategy");
  const luma = await s.router.submitVideo({ model: "ray-2", prompt: "a dog", duration_seconds: 7, routing_strategy: "manual" });
  t.strictSame(luma, { provider: "luma", model: "ray-2", task_id: "luma-task", poll_after_ms: 700, duration_seconds: 9 });
  t.strictSame(s.luma.submitted[0]?.request, { model: "ray-2-720p", prompt: "a dog", duration_seconds: 9 });
  t.equal(s.luma.submitted[0]?.signal.aborted, false);
});

t.test("planned with or without its image: a model that needs one is refused without it", async (t) => {
  const s = setup();
  const e = await rejectedWith(s.router.submitVideo({ model: "gen4_turbo", prompt: "a cat", duration_seconds: 5, routing_strategy: "manual" }));
  t.equal(e.code, "invalid_request");
  t.match(e.details, [{ path: "body.model", message: /only animates an image/ }]);
  const auto = await s.router.submitVideo({ model: "ray-2", prompt: "a cat", duration_seconds: 5, routing_strategy: "auto" });
  t.equal(auto.provider, "luma");
  s.luma.submits.push(new ProviderCallError("luma", "http", "luma answered 503", { status: 503 }));
  const textOnly = await s.router.submitVideo({ model: "ray-2", prompt: "a cat", duration_seconds: 5, routing_strategy: "auto" });
  t.equal(textOnly.provider, "pika", "without an image the fallback skips gen4_turbo");
  t.equal(s.runway.submitted.length, 0);
});

t.test("a failing provider falls back to an equivalent model elsewhere, with that model's duration", async (t) => {
  const s = setup();
  s.runway.submits.push(new ProviderCallError("runway", "http", "runway answered 500", { status: 500 }));
  const res = await s.router.submitVideo(withImage);
  t.equal(res.provider, "luma");
  t.equal(res.model, "ray-2");
  t.equal(res.duration_seconds, 9);
  t.equal(s.luma.submitted[0]?.request.duration_seconds, 9);
  t.equal(s.runway.submitted[0]?.signal.aborted, true, "the failed attempt's signal is aborted");
  s.runway.submits.push(new ProviderCallError("runway", "http", "runway answered 400", { status: 400 }));
  const e = await rejectedWith(s.router.submitVideo(withImage));
  t.equal(e.code, "invalid_request", "a rejected request is not passed on");
  t.equal(s.luma.submitted.length, 1);
});

t.test("polls and cancels go to the task's provider, its breaker open or not", async (t) => {
  const s = setup({ breaker: { consecutiveFailures: 1, halfOpenAfterMs: 60_000 } });
  s.runway.submits.push(new ProviderCallError("runway", "http", "runway answered 503", { status: 503 }));
  await s.router.submitVideo(withImage);
  t.equal(s.router.healthOf("runway").state, "open");
  s.runway.polls.push({ state: "succeeded", clip: { kind: "url", url: "https://cdn.example/c.mp4" } });
  const held = task("runway");
  t.same(await s.router.pollVideo(held), { state: "succeeded", clip: { kind: "url", url: "https://cdn.example/c.mp4" } });
  t.equal(s.runway.polled[0]?.task, held);
  t.equal(s.luma.polled.length, 0);
  t.equal(await s.router.cancelVideo(held), undefined);
  t.same(s.runway.cancelled, [held]);
  t.same(s.luma.cancelled, []);
  t.same(await s.router.pollVideo(task("luma")), { state: "running", progress: 0.5, poll_after_ms: 1_000 });
  t.equal(s.luma.polled.length, 1);
});

t.test("a task of a provider not configured, or without video, is no_provider_available", async (t) => {
  const s = setup();
  const gone = await rejectedWith(s.router.pollVideo({ ...task("kling"), task_id: "k-9" }));
  t.equal(gone.code, "no_provider_available");
  t.equal(gone.message, "provider kling of video task k-9 is not configured");
  const r = new Router({ catalogue, adapters: new Map<string, ProviderAdapter>([["runway", { provider: "runway" }]]), timeoutMs: 1_000, maxAttempts: 1 });
  const novideo = await rejectedWith(r.cancelVideo(task("runway", "r-1")));
  t.equal(novideo.code, "no_provider_available");
  t.equal(novideo.message, "provider runway of video task r-1 is not configured");
});

t.test("a poll's failures: provider_error with one attempt; a hang ends at the attempt deadline as provider_timeout", async (t) => {
  const s = setup({ attemptTimeoutMs: 40 });
  s.runway.polls.push(new ProviderCallError("runway", "http", "runway answered 500", { status: 500 }));
  const failed = await rejectedWith(s.router.pollVideo(task("runway")));
  t.equal(failed.code, "provider_error");
  t.equal(failed.message, "runway answered 500");
  t.same(failed.details, { provider: "runway", upstream_status: 500, attempts: 1 });
  t.equal(s.runway.polled[0]?.signal.aborted, true, "given up: its signal aborted");
  t.match(s.runway.polled[0]?.signal.reason, { message: "attempt abandoned" });
  t.equal(s.runway.polled.length, 1, "no retry");
  s.runway.polls.push(new TypeError("x is undefined"));
  const bug = await rejectedWith(s.router.pollVideo(task("runway")));
  t.equal(bug.code, "provider_error");
  t.equal(bug.message, "runway failed: x is undefined", "an adapter bug is named after the task's provider");
  s.runway.polls.push("hang");
  const started = performance.now();
  const hung = await rejectedWith(s.router.pollVideo(task("runway")));
  t.ok(performance.now() - started < 1_000, "ended by the 40 ms attempt deadline, not the 2 s request deadline");
  t.equal(hung.code, "provider_timeout");
  t.equal(hung.message, "runway did not answer within 40 ms");
  t.same(hung.details, { provider: "runway", upstream_status: null, attempts: 1 });
});

t.test("the attempt deadline is bounded by the request's", async (t) => {
  const s = setup({ timeoutMs: 60, attemptTimeoutMs: 5_000 });
  s.luma.polls.push("hang");
  const started = performance.now();
  const e = await rejectedWith(s.router.pollVideo(task("luma")));
  t.ok(performance.now() - started < 1_500, "60 ms, not 5 s");
  t.equal(e.code, "provider_timeout");
  // The attempt's timer and the request's are both due at 60 ms: either may fire first.
  t.match(e.message, /^(luma did not answer within 60 ms|no answer within the 60 ms deadline)$/);
});

t.test("a Troupe error and a thrown non-error come back as they are; so does the client's abort", async (t) => {
  const s = setup();
  const own = new TroupeError("invalid_request", "bad task");
  s.runway.polls.push(own);
  t.equal(await s.router.pollVideo(task("runway")).catch((e: unknown) => e), own);
  const client = new AbortController();
  const failure = new ProviderCallError("runway", "http", "runway answered 503", { status: 503 });
  s.runway.polls.push("hang");
  const pending = s.router.pollVideo(task("runway"), { signal: client.signal }).catch((e: unknown) => e);
  client.abort(failure);
  t.equal(await pending, failure, "the client's reason, not a provider_error");
});

t.test("an answered call's signal is left alone past its deadlines", async (t) => {
  const s = setup({ timeoutMs: 300, attemptTimeoutMs: 200 });
  await s.router.pollVideo(task("luma"));
  await delay(600);
  t.equal(s.luma.polled[0]?.signal.aborted, false, "attempt timer cleared, request deadline disposed");
});

t.test("find asks, in routing order, each provider that can list its tasks; the first task found is named like a submitted one", async (t) => {
  const s = setup();
  const request: RoutedVideoRequest = { model: "gen4_turbo", prompt: "a cat", duration_seconds: 9, image, routing_strategy: "auto" };
  s.pika.finds.push(upstreamTask("pika-found"));
  const found = await s.router.findVideo(request, 1_700_000_000_000);
  t.strictSame(found, { provider: "pika", model: "pika-1", task_id: "pika-found", poll_after_ms: 700, duration_seconds: 8 });
  t.strictSame(s.luma.found, [{ request: { model: "ray-2-720p", prompt: "a cat", duration_seconds: 9, image }, sinceMs: 1_700_000_000_000 }], "luma first (runway cannot list), found nothing");
  t.strictSame(s.pika.found, [{ request: { model: "pika-1", prompt: "a cat", duration_seconds: 8, image }, sinceMs: 1_700_000_000_000 }]);
  s.luma.finds.push(upstreamTask("luma-found"));
  const first = await s.router.findVideo(request, 5);
  t.equal(first?.provider, "luma");
  t.equal(first?.duration_seconds, 9);
  t.equal(s.pika.found.length, 1, "not asked once luma had it");
  t.equal(await s.router.findVideo(request, 5), undefined, "none has it");
  t.equal(s.runway.submitted.length, 0);
});

t.test("find skips providers without video; a failing one is thrown as the provider's error", async (t) => {
  const pika = new ListingVideoDouble("pika");
  pika.finds.push(upstreamTask("p"));
  const r = new Router({
    catalogue,
    adapters: new Map<string, ProviderAdapter>([
      ["luma", { provider: "luma", video: { submit: () => Promise.reject(new Error("no")), poll: () => Promise.reject(new Error("no")), cancel: async () => undefined } }],
      ["pika", { provider: "pika", video: pika }],
    ]),
    timeoutMs: 1_000,
    maxAttempts: 2,
  });
  const found = await r.findVideo({ model: "ray-2", prompt: "x", duration_seconds: 4, routing_strategy: "auto" }, 0);
  t.equal(found?.provider, "pika", "luma's adapter cannot list: skipped");
  t.equal(found?.duration_seconds, 4);
  pika.finds.push(new ProviderCallError("pika", "http", "pika answered 502", { status: 502 }));
  const e = await rejectedWith(r.findVideo({ model: "pika-1", prompt: "x", duration_seconds: 4, routing_strategy: "manual" }, 0));
  t.equal(e.code, "provider_error");
  t.same(e.details, { provider: "pika", upstream_status: 502, attempts: 1 });
});

t.test("find without an image does not ask a model that needs one", async (t) => {
  const runway = new ListingVideoDouble("runway");
  runway.finds.push(upstreamTask("r"));
  const luma = new ListingVideoDouble("luma");
  const r = new Router({
    catalogue,
    adapters: new Map<string, ProviderAdapter>([
      ["runway", { provider: "runway", video: runway }],
      ["luma", { provider: "luma", video: luma }],
    ]),
    timeoutMs: 1_000,
    maxAttempts: 2,
  });
  t.equal(await r.findVideo({ model: "ray-2", prompt: "x", duration_seconds: 5, routing_strategy: "auto" }, 0), undefined);
  t.equal(luma.found.length, 1);
  t.equal(runway.found.length, 0, "gen4_turbo cannot make a segment without an image");
});
