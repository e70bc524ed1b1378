// The JobActor's own decisions, on the embedded host in process, with a
// VideoRouting test double (the end-to-end files use the real providers and
// fakes): a router failure at submit fails the job with its code; a failed
// narration fails it after the clips were billed; failures on our side are
// retried, then fail the job; a task that cannot be polled fails the job
// after MAX_POLL_FAILURES polls in a row, and one answered poll between
// failures starts the count again; a submission armed in this process goes
// straight to the provider, a repeated one first looks for its task there;
// the webhook event is published once with a deterministic id even when the
// first publish fails; a finished job's
// conversation callback goes to the ConversationActor.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { z } from "zod";
import { systemClock } from "../../core/clock.ts";
import { loadConfig } from "../../gateway/config.ts";
import { TroupeError } from "../../core/errors.ts";
import { createLogger } from "../../core/log.ts";
import type { OrganizationEvent } from "../../core/organization-events.ts";
import { defineActor, eraseDefinition } from "../../actors/actor.ts";
import { callActor } from "../../actors/host.ts";
import { createActorHost } from "../../actors/hosts/create-host.ts";
import { JobDirectory } from "../../actors/job/directory.ts";
import { storeJobEventBus } from "../../actors/job/events.ts";
import { createJobActor, type CreateJobInput, type JobActorDeps } from "../../actors/job/job-actor.ts";
import { jobEventId, MAX_POLL_FAILURES } from "../../actors/job/job-steps.ts";
import { concatClips, extractLastFrame, muxVoiceover } from "../../media/video-compose.ts";
import { createFileStore } from "../../media/create-file-store.ts";
import { Capabilities, mediaTools } from "../../media/media-tools.ts";
import { OutboundFetcher } from "../../media/outbound-fetch.ts";
import { Catalogue } from "../../providers/catalogue.ts";
import type { UsageRecord } from "../../providers/usage.ts";
import type { VideoTask, VideoTaskStatus } from "../../providers/video.ts";
import { EmbeddedDataStore } from "../../tenancy/embedded-data-store.ts";
import { fakeMp4 } from "../fakes/video-fakes.ts";
import { waitFor } from "../support/net.ts";
import { writeFileSync } from "node:fs";

const dataDir = mkdtempSync(join(tmpdir(), "troupe-job-actor-"));
const config = loadConfig({ TROUPE_DATA_DIR: dataDir, LOG_LEVEL: "silent" });
const log = createLogger("silent");
const store = new EmbeddedDataStore(dataDir, systemClock);
const files = await createFileStore(config.media, dataDir);
const directory = new JobDirectory(store);
const clip = join(dataDir, "clip.mp4");
writeFileSync(clip, fakeMp4());

/** What the double is told to do per prompt. */
const behaviour = new Map<string, "submit-fails" | "answer-lost-once" | "poll-fails" | "poll-flaky">();
/** Per prompt: polls that reached the double. */
const polls = new Map<string, number>();
/** Per prompt: submissions that reached the double, and the lookups for an earlier one (with their `since`). */
const submitted = new Map<string, number>();
const lookups: { prompt: string; sinceMs: number }[] = [];
const billed: UsageRecord[] = [];
const published: OrganizationEvent[] = [];
let publishFailures = 0;
let narrationFails = false;
let composeFailures = 0;
const callbacks: unknown[] = [];

const deps: JobActorDeps = {
  video: {
    submitVideo: async (req) => {
      if (behaviour.get(req.prompt) === "submit-fails") throw new TroupeError("no_provider_available", "every video provider is down");
      submitted.set(req.prompt, (submitted.get(req.prompt) ?? 0) + 1);
      if (behaviour.get(req.prompt) === "answer-lost-once" && submitted.get(req.prompt) === 1) throw new Error("the process died before the answer was read");
      return { provider: "double", model: "double-video", task_id: req.prompt, poll_after_ms: 10, duration_seconds: 2 };
    },
    // The provider keeps every submission: an earlier one of this prompt is found.
    findVideo: async (req, sinceMs) => {
      lookups.push({ prompt: req.prompt, sinceMs });
      return submitted.has(req.prompt) ? { provider: "double", model: "double-video", task_id: req.prompt, poll_after_ms: 10, duration_seconds: 2 } : undefined;
    },
    pollVideo: async (task: VideoTask): Promise<VideoTaskStatus> => {
      const n = (polls.get(task.task_id) ?? 0) + 1;
      polls.set(task.task_id, n);
      // What the router throws once its own retries on the provider's poll endpoint are spent.
      const unavailable = new TroupeError("provider_error", "the video provider answered HTTP 503");
      if (behaviour.get(task.task_id) === "poll-fails") throw unavailable;
      if (behaviour.get(task.task_id) === "poll-flaky") {
        // One failure short of the bound, one answered poll, as many failures again, then the clip.
        if (n === MAX_POLL_FAILURES) return { state: "running", progress: 0.5, poll_after_ms: 1 };
        if (n < 2 * MAX_POLL_FAILURES) throw unavailable;
      }
      return { state: "succeeded", clip: { kind: "file", path: clip } };
    },
    cancelVideo: async () => undefined,
  },
  plan: () => ({ model: "double-video", provider: "double" }),
  narrate: async () => {
    if (narrationFails) throw new TroupeError("provider_error", "the speech provider failed");
    throw new Error("not used");
  },
  compose: {
    concatClips: async (inputs, out) => {
      if (composeFailures > 0) {
        composeFailures -= 1;
        throw new Error("ffmpeg exploded");
      }
      await concatClips(inputs, out);
    },
    muxVoiceover,
    extractLastFrame,
  },
  media: { files, fetcher: new OutboundFetcher({ allowHosts: [], maxBytes: 1 << 20, timeoutMs: 1000 }), fileUrl: (id) => `http://troupe.test/v1/files/${id}`, ownFileId: () => undefined, capabilities: new Capabilities(mediaTools) },
  catalogue: Catalogue.load([]),
  bill: async (record) => void billed.push(record),
  log,
  now: () => Date.now(),
  directory,
  events: storeJobEventBus(store, () => undefined),
  publisher: {
    publish: async (event) => {
      if (publishFailures > 0) {
        publishFailures -= 1;
        throw new Error("webhooks unavailable");
      }
      published.push(event);
    },
  },
  watchdogMs: 300,
  retryBaseMs: 20,
  pollRetryBaseMs: 1,
};
const job = createJobActor(deps);
// Stands in for the ConversationActor: records the callback.
const conversation = defineActor({
  type: "ConversationActor",
  state: z.object({}),
  initialState: () => ({}),
  methods: { videoFinished: { input: z.record(z.string(), z.unknown()), run: async (_ctx, input) => void callbacks.push(input) } },
});
const host = await createActorHost({ mode: "embedded", dataDir, actors: config.actors, clock: systemClock, log });
host.register([eraseDefinition(job), eraseDefinition(conversation)]);
await host.start();
t.teardown(async () => {
  await host.stop();
  await files.close();
  await store.close();
});

const owner = { organization_id: "org_1", project_id: "prj_1", environment_id: "env_1" };
const payer = { ...owner, api_key_id: "key_1", live: true };
const input = (over: Partial<CreateJobInput>): CreateJobInput => ({
  owner, payer, prompt: "p", duration_seconds: 2, narration_text: null, scenes: null, model: null, routing_strategy: "auto", image: null, callback: null, ...over,
});
let n = 0;
const newId = () => `00000000-0000-4000-8000-${String(++n).padStart(12, "0")}`;
const final = async (id: string) => {
  await waitFor(async () => ["completed", "failed"].includes((await directory.get("org_1", id))?.job.status ?? ""), 20_000, `job ${id} to finish`);
  const entry = (await directory.get("org_1", id))!;
  t.equal(entry.environment_id, "env_1", "the snapshot names the job's environment");
  return entry.job;
};

t.test("a router failure at submit fails the job with the router's code; job.failed is published once, with a deterministic id, after a failed publish", async (t) => {
  behaviour.set("down scene", "submit-fails");
  publishFailures = 2;
  const id = newId();
  await callActor(host, job, id, "create", input({ scenes: ["ok scene", "down scene"] }));
  const done = await final(id);
  t.equal(done.error?.code, "no_provider_available");
  t.same(done.segments.map((s) => s.status), ["completed", "cancelled"]);
  await waitFor(async () => published.some((e) => "job" in e.data && e.data.job.id === id), 10_000, "the event");
  const events = published.filter((e) => "job" in e.data && e.data.job.id === id);
  t.equal(events.length, 1, "published once despite the retries");
  t.match(events[0], { id: jobEventId(id, "job.failed"), type: "job.failed", organization_id: "org_1" });
  t.equal(jobEventId(id, "job.failed"), jobEventId(id, "job.failed"), "deterministic");
  t.not(jobEventId(id, "job.failed"), jobEventId(id, "job.completed"));
  t.match(jobEventId(id, "job.failed"), /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, "UUID-shaped");
  t.same(billed.filter((b) => b.request_id.startsWith(`job:${id}:`)).map((b) => [b.request_id, b.category, b.units, b.live]), [[`job:${id}:segment:0`, "video", 2, true]]);
});

t.test(`a task whose provider cannot be polled fails the job after ${MAX_POLL_FAILURES} failed polls in a row, with the reason`, async (t) => {
  behaviour.set("unpollable", "poll-fails");
  const id = newId();
  await callActor(host, job, id, "create", input({ prompt: "unpollable" }));
  const done = await final(id);
  t.equal(done.status, "failed", "never stuck in processing");
  t.same(done.error, {
    code: "provider_error",
    message: `segment 0: double could not be polled ${MAX_POLL_FAILURES} times in a row (last error: the video provider answered HTTP 503)`,
  });
  t.equal(polls.get("unpollable"), MAX_POLL_FAILURES, "polled exactly that many times");
  t.same(done.segments.map((s) => s.status), ["failed"]);
  t.same(billed.filter((b) => b.request_id.startsWith(`job:${id}:`)), [], "nothing billed");
});

t.test(`failed polls count in a row: ${MAX_POLL_FAILURES - 1} failures, one answer, ${MAX_POLL_FAILURES - 1} more failures, and the job still completes`, async (t) => {
  behaviour.set("flaky poll", "poll-flaky");
  const id = newId();
  await callActor(host, job, id, "create", input({ prompt: "flaky poll" }));
  const done = await final(id);
  t.same(done.error, null, "not failed: no run of failures reached the bound");
  t.equal(done.status, "completed");
  t.equal(polls.get("flaky poll"), 2 * MAX_POLL_FAILURES, "every poll of both runs reached the provider, then the clip's");
  t.same(billed.filter((b) => b.request_id.startsWith(`job:${id}:`)).map((b) => b.request_id), [`job:${id}:segment:0`], "the clip is billed");
});

t.test("a failed narration fails the job after its clips were billed", async (t) => {
  narrationFails = true;
  const id = newId();
  await callActor(host, job, id, "create", input({ narration_text: "spoken" }));
  const done = await final(id);
  narrationFails = false;
  t.equal(done.error?.code, "provider_error");
  t.match(done.error?.message, /^narration: /);
  t.same(billed.filter((b) => b.request_id.startsWith(`job:${id}:`)).map((b) => b.request_id), [`job:${id}:segment:0`]);
});

t.test("failures on our side are retried: a passing one completes the job, five in a row fail it", async (t) => {
  composeFailures = 2;
  const recovered = newId();
  await callActor(host, job, recovered, "create", input({ callback: { conversation_id: "conv-1", tool_call_id: "call-1" } }));
  const ok = await final(recovered);
  t.equal(ok.status, "completed");
  t.match(ok.result_url, /^http:\/\/troupe\.test\/v1\/files\/file_/);
  await waitFor(async () => callbacks.length > 0, 10_000, "the conversation callback");
  t.same(callbacks, [{ job_id: recovered, tool_call_id: "call-1", result_url: ok.result_url, error: null }], "the conversation is called back once");

  composeFailures = 5;
  const broken = newId();
  await callActor(host, job, broken, "create", input({}));
  const failed = await final(broken);
  t.equal(failed.error?.code, "internal_error");
  t.match(failed.error?.message, /ffmpeg exploded/);
  t.equal(composeFailures, 0, "tried five times");
});

t.test("a submission this process armed goes straight to the provider; one repeated after its answer was lost finds its task instead of submitting again", async (t) => {
  behaviour.set("lost answer", "answer-lost-once");
  const id = newId();
  const createdAt = Date.now();
  await callActor(host, job, id, "create", input({ scenes: ["fresh scene", "lost answer", "after"] }));
  const done = await final(id);
  t.equal(done.status, "completed");
  t.same(Object.fromEntries(["fresh scene", "lost answer", "after"].map((p) => [p, submitted.get(p)])), { "fresh scene": 1, "lost answer": 1, after: 1 }, "each scene reached the provider once");
  t.same(lookups.map((l) => l.prompt), ["lost answer"], "only the repeated submission looked first");
  t.ok(lookups[0]!.sinceMs >= createdAt && lookups[0]!.sinceMs <= Date.now(), "from when the segment became the next to submit");
  t.same(billed.filter((b) => b.request_id.startsWith(`job:${id}:`)).map((b) => b.request_id), [0, 1, 2].map((i) => `job:${id}:segment:${i}`));
});

t.test("owner checks: another organization's get and cancel are 404; a finished job's cancel is 409; create twice is 409", async (t) => {
  const id = newId();
  await callActor(host, job, id, "create", input({}));
  await t.rejects(callActor(host, job, id, "get", { organization_id: "org_2" }), { code: "not_found" });
  await t.rejects(callActor(host, job, id, "cancel", { organization_id: "org_2" }), { code: "not_found" });
  await t.rejects(callActor(host, job, id, "create", input({})), { code: "conflict" });
  await final(id);
  t.match(await callActor(host, job, id, "get", { organization_id: "org_1" }), { id, status: "completed" });
  await t.rejects(callActor(host, job, id, "cancel", { organization_id: "org_1" }), { code: "conflict" });
  t.equal(await directory.get("org_2", id), undefined);
});
