// The video job's steps (actors/job/job-steps.ts) in process, one `advance`
// at a time, with recording doubles: a scripted VideoRouting, a memory file
// store, composer and narrator doubles that write what they are given, a
// recording bill and log, and an injected clock. What it pins:
// - a server without ffmpeg fails the job at once (capability_unavailable);
// - submit: the request sent (requested model, prompt, duration, routing,
//   image), the segment and job after it (processing, submissions + 1, poll
//   failures reset, model and provider of the task), a TroupeError at submit
//   fails the job with its code and other errors are thrown; a possible
//   earlier submission is looked for from `armed_at` (else created_at), a
//   found task is polled instead of submitting again, a failed lookup submits;
// - poll: progress clamped to [previous, 0.99], null progress kept, the
//   provider's wait returned; failed, lost (resubmitted) and succeeded (clip
//   re-hosted, billed once with the parts of its hold, part closed);
// - poll failures counted in a row, not in total: the waits double from the
//   base up to 30 s, the job fails at exactly MAX_POLL_FAILURES (not one
//   before) with the error's code (provider_error for a non-Troupe error) and
//   the text naming the segment, provider, bound and last error;
// - failJob: processing segments failed, pending ones cancelled, others kept;
// - narration billed with its part and stored, a TroupeError fails the job;
// - compose: the clips in order, the narration muxed, the result stored and
//   the job completed; the compose limiter is used when given;
// - image_to_video: the caller's image first, then the previous clip's last
//   frame, stored on the segment.
// Fast on purpose: the mutation run runs this file once per mutant.
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { jobData, segmentState } from "../support/job-data.ts";
import { TroupeError } from "../../core/errors.ts";
import { advance, failJob, jobEventId, MAX_POLL_FAILURES, narrationRequestId, segmentRequestId, segmentToSubmit, type NarrationOutcome, type StepDeps } from "../../actors/job/job-steps.ts";
import type { JobData, SegmentState } from "../../actors/job/types.ts";
import type { JobBudgetState } from "../../actors/job/job-budget.ts";
import type { FileStore, PutInput, StoredFile } from "../../media/file-store.ts";
import { Capabilities, mediaTools, type MediaTool } from "../../media/media-tools.ts";
import { OutboundFetcher, type FetchedBody, type FetchOptions } from "../../media/outbound-fetch.ts";
import { Catalogue } from "../../providers/catalogue.ts";
import type { UsageRecord } from "../../providers/usage.ts";
import type { VideoSegmentRequest, VideoTask, VideoTaskStatus } from "../../providers/video.ts";
import type { RoutingStrategy } from "../../providers/types.ts";
import type { Reservation } from "../../tenancy/ledger.ts";
import { recordingLog } from "../support/recording-log.ts";

// The steps' scratch dirs (troupe-frame-*, troupe-compose-*) go under this one, so the test sees them removed.
const scratch = mkdtempSync(join(tmpdir(), "job-steps-unit-"));
process.env["TMPDIR"] = scratch;
t.teardown(() => rmSync(scratch, { recursive: true, force: true }));
const leftovers = () => readdirSync(scratch).filter((name) => name.startsWith("troupe-"));

/** A provider's clip URL, answered from memory: the URLs and accept lists asked for are kept. */
class RecordingFetcher extends OutboundFetcher {
  readonly asked: { url: string; accept: readonly string[] | undefined }[] = [];
  answer: FetchedBody | Error = { body: Buffer.alloc(0), contentType: "application/octet-stream", url: "" };
  override async fetch(url: string, options: FetchOptions = {}): Promise<FetchedBody> {
    this.asked.push({ url, accept: options.accept });
    if (this.answer instanceof Error) throw this.answer;
    return this.answer;
  }
}

const clockMs = 1_764_790_000_000;
const createdAt = "2025-12-03T19:26:40.000Z";
const clipBytes = (tag: string) => Buffer.from(`${tag}:`.padEnd(80, "x"));

type Req = VideoSegmentRequest & { routing_strategy: RoutingStrategy };

function memoryFiles(): FileStore & { stored: Map<string, { body: Buffer; input: PutInput }> } {
  const stored = new Map<string, { body: Buffer; input: PutInput }>();
  let n = 0;
  const fileOf = (id: string, body: Buffer, contentType: string): StoredFile => ({ id, bytes: body.length, content_type: contentType, created_at: clockMs, organization_id: "org", environment_id: "env", scope: "video" }) as unknown as StoredFile;
  return {
    stored,
    put: async (input) => {
      n += 1;
      const id = `file_${n}`;
      const body = Buffer.isBuffer(input.body) ? input.body : Buffer.alloc(0);
      stored.set(id, { body, input });
      return fileOf(id, body, input.contentType);
    },
    head: async () => undefined,
    get: async (id) => {
      const got = stored.get(id);
      if (!got) return undefined;
      return { file: fileOf(id, got.body, got.input.contentType), body: (async function* () { yield got.body.subarray(0, 3); yield got.body.subarray(3); })() };
    },
    delete: async () => false,
    close: async () => undefined,
  };
}

const segment = segmentState;

const job = (over: Partial<JobData> = {}): JobData => jobData({ created_at: createdAt, updated_at: createdAt, ...over });

const task = (over: Partial<VideoTask> = {}): VideoTask => ({ provider: "prov", model: "vid-model", task_id: "task-1", poll_after_ms: 1234, duration_seconds: 5, ...over });

interface Rig {
  deps: StepDeps;
  files: ReturnType<typeof memoryFiles>;
  submits: Req[];
  finds: { req: Req; sinceMs: number }[];
  polls: VideoTask[];
  billed: { record: UsageRecord; settles: readonly Reservation[] | undefined }[];
  lines: ReturnType<typeof recordingLog>["lines"];
  composed: { concat: string[][]; mux: number; frames: number; slots: number };
  narrated: string[];
  /** Every signal handed to a provider call or the narrator. */
  signals: (AbortSignal | undefined)[];
  fetcher: RecordingFetcher;
  /** Set per test. */
  submitWith: (req: Req) => Promise<VideoTask>;
  findWith: (req: Req) => Promise<VideoTask | undefined>;
  pollWith: (t: VideoTask) => Promise<VideoTaskStatus>;
  narrateWith: (text: string) => Promise<NarrationOutcome>;
}

function rig(opts: { installed?: Iterable<MediaTool>; slots?: boolean; pollRetryBaseMs?: number } = {}): Rig {
  const files = memoryFiles();
  const { log, lines } = recordingLog();
  const fetcher = new RecordingFetcher({ allowHosts: [], maxBytes: 1 << 20, timeoutMs: 1000 });
  const r: Rig = {
    signals: [],
    fetcher,
    files,
    submits: [],
    finds: [],
    polls: [],
    billed: [],
    lines,
    composed: { concat: [], mux: 0, frames: 0, slots: 0 },
    narrated: [],
    submitWith: async () => task(),
    findWith: async () => undefined,
    pollWith: async () => ({ state: "running", progress: null, poll_after_ms: 7 }),
    narrateWith: async () => ({ audio: { bytes: Buffer.from("speech"), contentType: "audio/mpeg" }, model: "tts", provider: "speaker", characters: 11 }) as NarrationOutcome,
    deps: undefined as unknown as StepDeps,
  };
  r.deps = {
    video: {
      submitVideo: async (req, ctx) => (r.signals.push(ctx.signal), r.submits.push(req), r.submitWith(req)),
      findVideo: async (req, sinceMs, ctx) => (r.signals.push(ctx.signal), r.finds.push({ req, sinceMs }), r.findWith(req)),
      pollVideo: async (tk, ctx) => (r.signals.push(ctx.signal), r.polls.push(tk), r.pollWith(tk)),
      cancelVideo: async () => undefined,
    },
    narrate: async (text, signal) => (r.signals.push(signal), r.narrated.push(text), r.narrateWith(text)),
    compose: {
      concatClips: async (inputs, out) => {
        r.composed.concat.push(inputs);
        const parts = await Promise.all(inputs.map((p) => readFile(p)));
        await writeFile(out, Buffer.concat([Buffer.from("joined|"), ...parts]));
      },
      muxVoiceover: async (video, audio, out) => {
        r.composed.mux += 1;
        await writeFile(out, Buffer.concat([await readFile(video), Buffer.from("|voice|"), await readFile(audio)]));
      },
      extractLastFrame: async (video, out) => {
        r.composed.frames += 1;
        await writeFile(out, Buffer.concat([Buffer.from("frame-of|"), await readFile(video)]));
      },
    },
    ...(opts.slots ? { composeSlots: <T>(fn: () => Promise<T>) => ((r.composed.slots += 1), fn()) } : {}),
    media: { files, fetcher, fileUrl: (id) => `http://troupe.test/v1/files/${id}`, ownFileId: () => undefined, capabilities: new Capabilities(opts.installed ?? mediaTools) },
    catalogue: Catalogue.load([]),
    bill: async (record, settles) => void r.billed.push({ record, settles }),
    log,
    now: () => clockMs,
    ...(opts.pollRetryBaseMs === undefined ? {} : { pollRetryBaseMs: opts.pollRetryBaseMs }),
  };
  return r;
}

const budget = (): JobBudgetState => ({ project_id: "proj", period: "2025-12", parts: [{ id: "p0", amount_nanos: 10, open: true }, { id: "p1", amount_nanos: 20, open: true }], api_key_id: "key" });

t.test("ids", async (t) => {
  t.equal(segmentRequestId("j", 3), "job:j:segment:3");
  t.equal(narrationRequestId("j"), "job:j:narration");
  t.equal(jobEventId("j", "video.completed"), jobEventId("j", "video.completed"));
  t.not(jobEventId("j", "video.completed"), jobEventId("j", "video.failed"));
  t.match(jobEventId("j", "x"), /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
});

t.test("failJob: processing segments fail, pending ones are cancelled, finished ones kept", async (t) => {
  const j = job({ segments: [segment(0, { status: "completed" }), segment(1, { status: "processing" }), segment(2), segment(3, { status: "failed" })] });
  failJob(j, "code_x", "message y");
  t.equal(j.status, "failed");
  t.same(j.error, { code: "code_x", message: "message y" });
  t.same(j.segments.map((s) => s.status), ["completed", "failed", "cancelled", "failed"]);
});

t.test("segmentToSubmit", async (t) => {
  t.equal(segmentToSubmit(job({ segments: [segment(0, { status: "completed" }), segment(1)] }))?.index, 1);
  t.equal(segmentToSubmit(job({ segments: [segment(0, { status: "processing", task: task() })] })), undefined);
  // A pending segment with a task (lost and reset keeps task null; a stale one still resubmits).
  t.equal(segmentToSubmit(job({ segments: [segment(0, { status: "pending", task: task() })] }))?.index, 0);
  t.equal(segmentToSubmit(job({ segments: [segment(0, { status: "completed" })] })), undefined);
});

t.test("without ffmpeg the job fails at once, touching no provider", async (t) => {
  const r = rig({ installed: [] });
  const j = job();
  const out = await advance(j, r.deps);
  t.same(out, { afterMs: 0 });
  t.equal(j.status, "failed");
  t.equal(j.error?.code, "capability_unavailable");
  t.match(j.error?.message, /^video generation is unavailable on this server: ffmpeg/);
  t.equal(j.segments[0]!.status, "cancelled");
  t.same(r.submits, []);
  t.same(r.finds, []);
});

t.test("submit: the request, then the segment and job after it", async (t) => {
  const r = rig();
  const j = job({ segments: [segment(0, { poll_failures: 3, submissions: 1, progress: 0.5 })] });
  const out = await advance(j, r.deps, false);
  t.same(out, { afterMs: 1234 });
  t.same(r.finds, [], "not looked for when the caller vouches");
  t.same(r.submits, [{ model: "asked-model", prompt: "scene 0", duration_seconds: 4, routing_strategy: "auto" }]);
  const s = j.segments[0]!;
  t.same(s.task, task());
  t.equal(s.status, "processing");
  t.equal(s.progress, 0);
  t.equal(s.submissions, 2);
  t.equal(s.poll_failures, 0);
  t.equal(j.status, "processing");
  t.equal(j.model, "vid-model");
  t.equal(j.provider, "prov");
  t.equal(j.error, null);
});

t.test("submit: a routed job asks for its planned model", async (t) => {
  const r = rig();
  const j = job({ requested_model: null, routing_strategy: "cheapest" as RoutingStrategy });
  await advance(j, r.deps, false);
  t.equal(r.submits[0]!.model, "planned-model");
  t.equal(r.submits[0]!.routing_strategy, "cheapest");
  t.notOk("image" in r.submits[0]!);
});

t.test("submit: a TroupeError fails the job with its code and message; another error is thrown", async (t) => {
  const r = rig();
  r.submitWith = async () => {
    throw new TroupeError("no_provider_available", "every video provider is down");
  };
  const j = job({ segments: [segment(0), segment(1)] });
  t.same(await advance(j, r.deps, false), { afterMs: 0 });
  t.equal(j.status, "failed");
  t.same(j.error, { code: "no_provider_available", message: "every video provider is down" });
  t.same(j.segments.map((s) => s.status), ["cancelled", "cancelled"]);
  t.equal(j.segments[0]!.submissions, 0);

  const r2 = rig();
  const boom = new Error("socket closed");
  r2.submitWith = async () => {
    throw boom;
  };
  const j2 = job();
  await t.rejects(advance(j2, r2.deps, false), boom);
  t.equal(j2.status, "queued");
  t.equal(j2.error, null);
});

t.test("submit: a possible earlier submission is looked for first", async (t) => {
  await t.test("from armed_at; a found task is used, not submitted again", async (t) => {
    const r = rig();
    const found = task({ task_id: "earlier", poll_after_ms: 99 });
    r.findWith = async () => found;
    const j = job({ segments: [segment(0, { armed_at: 555 })] });
    t.same(await advance(j, r.deps), { afterMs: 99 });
    t.equal(r.finds.length, 1);
    t.equal(r.finds[0]!.sinceMs, 555);
    t.equal(r.finds[0]!.req.prompt, "scene 0");
    t.same(r.submits, []);
    t.same(j.segments[0]!.task, found);
    t.equal(j.segments[0]!.submissions, 1);
    const warn = r.lines.find((l) => l.msg === "video submission recovered after a crash: polling the task it made");
    t.ok(warn);
    t.equal(warn?.level, "warn");
    t.same(warn?.fields, { job_id: "job_1", segment: 0, provider: "prov", task_id: "earlier" });
  });
  await t.test("from created_at without armed_at; none found: submitted, nothing logged", async (t) => {
    const r = rig();
    const j = job();
    await advance(j, r.deps);
    t.equal(r.finds[0]!.sinceMs, Date.parse(createdAt));
    t.equal(r.submits.length, 1);
    t.same(r.lines, []);
  });
  await t.test("a failed lookup is logged and the segment submitted", async (t) => {
    const r = rig();
    const error = new Error("list failed");
    r.findWith = async () => {
      throw error;
    };
    const j = job();
    await advance(j, r.deps);
    t.equal(r.submits.length, 1);
    t.equal(j.segments[0]!.status, "processing");
    t.same(r.lines, [{ level: "warn", msg: "could not look for an earlier submission; submitting", fields: { job_id: "job_1", segment: 0, error } }]);
  });
});

function processing(over: Partial<SegmentState> = {}): SegmentState {
  return segment(0, { status: "processing", task: task(), submissions: 1, ...over });
}

t.test("poll: running and pending keep the segment, clamp its progress, return the provider's wait", async (t) => {
  const r = rig();
  const j = job({ status: "processing", segments: [processing({ progress: 0.4, poll_failures: 5 })] });
  r.pollWith = async () => ({ state: "running", progress: 0.3, poll_after_ms: 77 });
  t.same(await advance(j, r.deps), { afterMs: 77 });
  t.equal(j.segments[0]!.progress, 0.4, "never goes back");
  t.equal(j.segments[0]!.poll_failures, 0, "an answered poll resets the count");
  t.same(r.polls, [task()]);
  r.pollWith = async () => ({ state: "pending", progress: 0.6, poll_after_ms: 88 });
  t.same(await advance(j, r.deps), { afterMs: 88 });
  t.equal(j.segments[0]!.progress, 0.6);
  r.pollWith = async () => ({ state: "running", progress: 1, poll_after_ms: 5 });
  await advance(j, r.deps);
  t.equal(j.segments[0]!.progress, 0.99, "not complete until stored");
  r.pollWith = async () => ({ state: "running", progress: null, poll_after_ms: 5 });
  await advance(j, r.deps);
  t.equal(j.segments[0]!.progress, 0.99);
  t.equal(j.segments[0]!.status, "processing");
  t.equal(j.status, "processing");
  t.same(r.submits, []);
  t.same(r.billed, []);
});

t.test("poll: a failed task fails the segment and the job with the provider's text", async (t) => {
  const r = rig();
  const j = job({ status: "processing", segments: [segment(0, { status: "completed", file_id: "f" }), processing({ index: 1 }), segment(2)] });
  r.pollWith = async () => ({ state: "failed", code: "content_policy", message: "refused" }) as VideoTaskStatus;
  t.same(await advance(j, r.deps), { afterMs: 0 });
  t.equal(j.status, "failed");
  t.same(j.error, { code: "provider_error", message: "segment 1 failed at prov: refused (content_policy)" });
  t.same(j.segments.map((s) => s.status), ["completed", "failed", "cancelled"]);
});

t.test("poll: a lost task is submitted again", async (t) => {
  const r = rig();
  const j = job({ status: "processing", segments: [processing({ progress: 0.7, armed_at: 42 })] });
  r.pollWith = async () => ({ state: "lost" }) as VideoTaskStatus;
  t.same(await advance(j, r.deps), { afterMs: 0 });
  const s = j.segments[0]!;
  t.equal(s.task, null);
  t.equal(s.status, "pending");
  t.equal(s.progress, 0);
  t.equal(s.armed_at, null);
  t.equal(j.status, "processing");
  t.same(r.lines.map((l) => [l.level, l.msg, l.fields]), [["warn", "video task lost by the provider; resubmitting", { job_id: "job_1", segment: 0, provider: "prov" }]]);
  r.submitWith = async () => task({ task_id: "again" });
  await advance(j, r.deps, false);
  t.equal(s.submissions, 2);
  t.equal(s.task?.task_id, "again");
});

t.test("poll: a succeeded clip is re-hosted, billed once with its hold's parts, and the part closed", async (t) => {
  const r = rig();
  const b = budget();
  const j = job({ status: "processing", budget: b, segments: [processing(), segment(1)] });
  const path = join(scratch, "clip.mp4");
  await writeFile(path, clipBytes("c0"));
  r.pollWith = async () => ({ state: "succeeded", clip: { kind: "file", path } });
  t.same(await advance(j, r.deps), { afterMs: 0 });
  const s = j.segments[0]!;
  t.equal(s.status, "completed");
  t.equal(s.progress, 1);
  t.equal(s.billed, true);
  t.equal(s.file_id, "file_1");
  const stored = r.files.stored.get("file_1")!;
  t.same(stored.body, clipBytes("c0"));
  t.equal(stored.input.contentType, "video/mp4");
  t.equal(stored.input.scope, "video");
  t.equal(stored.input.organizationId, "org");
  t.equal(stored.input.environmentId, "env");
  t.equal(r.billed.length, 1);
  const { record, settles } = r.billed[0]!;
  t.equal(record.request_id, "job:job_1:segment:0");
  t.equal(record.category, "video");
  t.equal(record.model, "vid-model");
  t.equal(record.provider, "prov");
  t.equal(record.units, 5);
  t.equal(record.input_tokens, 0);
  t.equal(record.api_key_id, "key");
  t.same(settles, [{ project_id: "proj", period: "2025-12", id: "p0" }, { project_id: "proj", api_key_id: "key", period: "2025-12", id: "p0" }]);
  t.same(b.parts.map((p) => p.open), [false, true]);
  t.equal(j.status, "processing");
  t.equal(segmentToSubmit(j)?.index, 1);
});

t.test("poll: an empty clip is refused (nothing billed, the part stays held)", async (t) => {
  const r = rig();
  const b = budget();
  const j = job({ status: "processing", budget: b, segments: [processing()] });
  const path = join(scratch, "empty.mp4");
  await writeFile(path, Buffer.alloc(63, 1));
  r.pollWith = async () => ({ state: "succeeded", clip: { kind: "file", path } });
  await t.rejects(advance(j, r.deps), /the clip is empty/);
  t.same(r.billed, []);
  t.equal(b.parts[0]!.open, true);
  t.equal(j.segments[0]!.status, "processing");
  await writeFile(path, Buffer.alloc(64, 1));
  await advance(j, r.deps);
  t.equal(j.segments[0]!.status, "completed", "64 bytes is a clip");
});

t.test("poll failures: counted in a row, the waits doubling to 30 s, the job failed at the bound", async (t) => {
  const r = rig();
  const j = job({ status: "processing", segments: [processing(), segment(1)] });
  const unavailable = new TroupeError("provider_timeout", "HTTP 503");
  r.pollWith = async () => {
    throw unavailable;
  };
  const waits: number[] = [];
  for (let n = 1; n < MAX_POLL_FAILURES; n++) {
    waits.push((await advance(j, r.deps)).afterMs);
    t.equal(j.segments[0]!.poll_failures, n);
    t.equal(j.status, "processing", `still processing after ${n}`);
  }
  t.same(waits, [1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]);
  const warns = r.lines.filter((l) => l.msg === "video poll failed");
  t.equal(warns.length, MAX_POLL_FAILURES - 1);
  t.same(warns[2]!.fields, { job_id: "job_1", segment: 0, failures: 3, error: unavailable });
  t.equal(warns[2]!.level, "warn");
  t.same(await advance(j, r.deps), { afterMs: 0 });
  t.equal(j.status, "failed");
  t.same(j.error, { code: "provider_timeout", message: "segment 0: prov could not be polled 8 times in a row (last error: HTTP 503)" });
  t.same(j.segments.map((s) => s.status), ["failed", "cancelled"]);
  t.equal(MAX_POLL_FAILURES, 8);
});

t.test("poll failures: one answered poll starts the count again", async (t) => {
  const r = rig({ pollRetryBaseMs: 10 });
  const j = job({ status: "processing", segments: [processing()] });
  const fail = async (): Promise<VideoTaskStatus> => {
    throw new TroupeError("provider_error", "down");
  };
  r.pollWith = fail;
  for (let n = 1; n < MAX_POLL_FAILURES; n++) await advance(j, r.deps);
  t.equal(j.segments[0]!.poll_failures, MAX_POLL_FAILURES - 1);
  r.pollWith = async () => ({ state: "running", progress: null, poll_after_ms: 3 });
  await advance(j, r.deps);
  t.equal(j.segments[0]!.poll_failures, 0);
  r.pollWith = fail;
  t.same((await advance(j, r.deps)).afterMs, 20, "the base shortened, first wait base × 2");
  for (let n = 2; n < MAX_POLL_FAILURES; n++) await advance(j, r.deps);
  t.equal(j.status, "processing", `${2 * MAX_POLL_FAILURES - 2} failures in total, never ${MAX_POLL_FAILURES} in a row`);
  await advance(j, r.deps);
  t.equal(j.status, "failed");
});

t.test("poll failures: a non-Troupe error fails with provider_error and its text; a thrown string too", async (t) => {
  const r = rig();
  const j = job({ status: "processing", segments: [processing({ poll_failures: MAX_POLL_FAILURES - 1 })] });
  r.pollWith = async () => {
    throw new Error("ECONNRESET");
  };
  await advance(j, r.deps);
  t.same(j.error, { code: "provider_error", message: "segment 0: prov could not be polled 8 times in a row (last error: ECONNRESET)" });

  const j2 = job({ status: "processing", segments: [processing({ index: 0, poll_failures: MAX_POLL_FAILURES - 1 })] });
  r.pollWith = async () => {
    throw "plain words";
  };
  await advance(j2, r.deps);
  t.same(j2.error, { code: "provider_error", message: "segment 0: prov could not be polled 8 times in a row (last error: plain words)" });

  // Past the bound (a state written by an older bound) fails too.
  const j3 = job({ status: "processing", segments: [processing({ poll_failures: MAX_POLL_FAILURES + 3 })] });
  await advance(j3, r.deps);
  t.equal(j3.status, "failed");
});

t.test("narration: spoken, stored, billed with its part, the part closed", async (t) => {
  const r = rig();
  const b = budget();
  b.parts = [{ id: "p0", amount_nanos: 1, open: false }, { id: "p1", amount_nanos: 2, open: true }];
  b.project = false;
  const j = job({ status: "processing", narration_text: "hello there", budget: b, segments: [segment(0, { status: "completed", file_id: "x" })] });
  t.same(await advance(j, r.deps), { afterMs: 0 });
  t.same(r.narrated, ["hello there"]);
  t.equal(j.narration_file_id, "file_1");
  const stored = r.files.stored.get("file_1")!;
  t.same(stored.body, Buffer.from("speech"));
  t.equal(stored.input.contentType, "audio/mpeg");
  t.equal(stored.input.scope, "video");
  t.equal(stored.input.organizationId, "org");
  t.equal(stored.input.environmentId, "env");
  const { record, settles } = r.billed[0]!;
  t.equal(record.request_id, "job:job_1:narration");
  t.equal(record.category, "audio");
  t.equal(record.model, "tts");
  t.equal(record.provider, "speaker");
  t.equal(record.units, 11);
  t.equal(record.input_tokens, 0);
  t.same(settles, [{ project_id: "proj", api_key_id: "key", period: "2025-12", id: "p1" }]);
  t.equal(b.parts[1]!.open, false);
  t.equal(j.status, "processing");
});

t.test("narration: a TroupeError fails the job; another error is thrown", async (t) => {
  const r = rig();
  r.narrateWith = async () => {
    throw new TroupeError("provider_error", "the speech provider failed");
  };
  const j = job({ status: "processing", narration_text: "hi", segments: [segment(0, { status: "completed", file_id: "x" })] });
  t.same(await advance(j, r.deps), { afterMs: 0 });
  t.same(j.error, { code: "provider_error", message: "narration: the speech provider failed" });
  t.equal(j.status, "failed");
  t.same(r.billed, []);
  const boom = new Error("disk");
  r.narrateWith = async () => {
    throw boom;
  };
  const j2 = job({ status: "processing", narration_text: "hi", segments: [segment(0, { status: "completed", file_id: "x" })] });
  await t.rejects(advance(j2, r.deps), boom);
  t.equal(j2.status, "processing");
});

async function storedClips(r: Rig, n: number): Promise<SegmentState[]> {
  const segs: SegmentState[] = [];
  for (let i = 0; i < n; i++) {
    const f = await r.files.put({ body: clipBytes(`clip${i}`), contentType: "video/mp4", organizationId: "org", environmentId: "env", scope: "video" });
    segs.push(segment(i, { status: "completed", file_id: f.id, billed: true, progress: 1 }));
  }
  return segs;
}

t.test("compose: the clips in order, joined, stored; the job completed", async (t) => {
  const r = rig({ slots: true });
  const segs = await storedClips(r, 2);
  const j = job({ status: "processing", segments: segs, error: { code: "old", message: "retried" } });
  t.same(await advance(j, r.deps), { afterMs: 0 });
  t.equal(r.composed.slots, 1, "inside the compose limiter");
  t.equal(r.composed.concat.length, 1);
  t.match(r.composed.concat[0]!, [/clip-0\.mp4$/, /clip-1\.mp4$/]);
  t.equal(r.composed.mux, 0);
  t.equal(r.narrated.length, 0);
  t.equal(j.status, "completed");
  t.equal(j.error, null);
  t.equal(j.result_file_id, "file_3");
  t.equal(j.result_url, "http://troupe.test/v1/files/file_3");
  const out = r.files.stored.get("file_3")!;
  t.same(out.body, Buffer.concat([Buffer.from("joined|"), clipBytes("clip0"), clipBytes("clip1")]));
  t.equal(out.input.contentType, "video/mp4");
  t.equal(out.input.scope, "video");
  t.equal(out.input.organizationId, "org");
  t.equal(out.input.environmentId, "env");
});

t.test("compose: the narration muxed over the joined clips; without limiter", async (t) => {
  const r = rig();
  const segs = await storedClips(r, 1);
  const voice = await r.files.put({ body: Buffer.from("VOICE"), contentType: "audio/mpeg", organizationId: "org", environmentId: "env", scope: "video" });
  const j = job({ status: "processing", segments: segs, narration_text: "hi", narration_file_id: voice.id });
  await advance(j, r.deps);
  t.equal(r.composed.slots, 0);
  t.equal(r.composed.mux, 1);
  t.same(r.narrated, [], "already narrated");
  t.equal(j.status, "completed");
  t.same(r.files.stored.get(j.result_file_id!)!.body, Buffer.concat([Buffer.from("joined|"), clipBytes("clip0"), Buffer.from("|voice|VOICE")]));
});

t.test("compose: a missing stored clip is an internal error", async (t) => {
  const r = rig();
  const j = job({ status: "processing", segments: [segment(0, { status: "completed", file_id: "file_gone" })] });
  await t.rejects(advance(j, r.deps), { code: "internal_error", message: "stored file file_gone is missing" });
  t.equal(j.status, "processing");
});

t.test("image_to_video: the caller's image first, then the last frame of the previous clip", async (t) => {
  const r = rig();
  const img = await r.files.put({ body: Buffer.from("PNGDATA"), contentType: "image/jpeg", organizationId: "org", environmentId: "env", scope: "video" });
  const j = job({ type: "image_to_video", image: { file_id: img.id, content_type: "image/jpeg" }, segments: [segment(0), segment(1)] });
  await advance(j, r.deps, false);
  t.same(r.submits[0]!.image, { url: `http://troupe.test/v1/files/${img.id}`, content_type: "image/jpeg", bytes: Buffer.from("PNGDATA") });
  t.equal(j.segments[0]!.frame_file_id, null);
  t.equal(r.composed.frames, 0);
  // Segment 0 done: segment 1 animates its last frame.
  const clip = await r.files.put({ body: clipBytes("c0"), contentType: "video/mp4", organizationId: "org", environmentId: "env", scope: "video" });
  j.segments[0]!.status = "completed";
  j.segments[0]!.file_id = clip.id;
  await advance(j, r.deps, false);
  t.equal(r.composed.frames, 1);
  const frameId = j.segments[1]!.frame_file_id!;
  t.ok(frameId);
  const frame = r.files.stored.get(frameId)!;
  t.same(frame.body, Buffer.concat([Buffer.from("frame-of|"), clipBytes("c0")]));
  t.equal(frame.input.contentType, "image/png");
  t.equal(frame.input.scope, "video");
  t.equal(frame.input.organizationId, "org");
  t.equal(frame.input.environmentId, "env");
  t.same(r.submits[1]!.image, { url: `http://troupe.test/v1/files/${frameId}`, content_type: "image/png", bytes: frame.body });
});

t.test("image_to_video: no image and no previous clip: submitted without one", async (t) => {
  const r = rig();
  const j = job({ type: "image_to_video", image: null, segments: [segment(0), segment(1)] });
  await advance(j, r.deps, false);
  t.notOk("image" in r.submits[0]!);
  // A later segment whose previous clip is not stored.
  const j2 = job({ type: "image_to_video", image: null, segments: [segment(0, { status: "completed" }), segment(1)] });
  await advance(j2, r.deps, false);
  t.notOk("image" in r.submits[1]!);
  t.equal(r.composed.frames, 0);
});

t.test("text_to_video: a later segment is submitted without the previous clip's frame", async (t) => {
  const r = rig();
  const clip = await r.files.put({ body: clipBytes("c0"), contentType: "video/mp4", organizationId: "org", environmentId: "env", scope: "video" });
  const j = job({ type: "text_to_video", image: null, segments: [segment(0, { status: "completed", file_id: clip.id }), segment(1)] });
  await advance(j, r.deps, false);
  t.equal(r.submits.length, 1);
  t.notOk("image" in r.submits[0]!, "only image_to_video chains its clips through their last frames");
  t.equal(r.composed.frames, 0, "no frame is extracted");
  t.equal(j.segments[1]!.frame_file_id, null);
});

t.test("poll: a clip at a URL is downloaded, stored as video/mp4; a failed download is the provider's error", async (t) => {
  const r = rig();
  const j = job({ status: "processing", segments: [processing()] });
  r.fetcher.answer = { body: clipBytes("remote"), contentType: "application/octet-stream", url: "https://cdn.example/clip" };
  r.pollWith = async () => ({ state: "succeeded", clip: { kind: "url", url: "https://cdn.example/clip" } });
  await advance(j, r.deps);
  t.same(r.fetcher.asked, [{ url: "https://cdn.example/clip", accept: ["video/", "application/octet-stream"] }]);
  const stored = r.files.stored.get(j.segments[0]!.file_id!)!;
  t.same(stored.body, clipBytes("remote"));
  t.equal(stored.input.contentType, "video/mp4");

  const j2 = job({ status: "processing", segments: [processing()] });
  r.fetcher.answer = new Error("reset");
  await t.rejects(advance(j2, r.deps), { code: "provider_error", message: "could not copy the prov result: the download failed" });
  t.equal(j2.segments[0]!.status, "processing");
});

t.test("every provider call and the narration get a live signal", async (t) => {
  const r = rig();
  const j = job({ narration_text: "words" });
  await advance(j, r.deps); // find + submit
  r.pollWith = async () => ({ state: "running", progress: null, poll_after_ms: 1 });
  await advance(j, r.deps); // poll
  j.segments[0]!.status = "completed";
  await advance(j, r.deps); // narrate
  t.equal(r.signals.length, 4);
  for (const signal of r.signals) {
    t.ok(signal instanceof AbortSignal);
    t.equal(signal?.aborted, false);
  }
});

t.test("the scratch dirs of frames and compositions are removed", async (t) => {
  const r = rig();
  const segs = await storedClips(r, 2);
  const j = job({ type: "image_to_video", segments: [segs[0]!, segment(1)] });
  await advance(j, r.deps, false);
  t.equal(r.composed.frames, 1);
  t.same(leftovers(), []);
  const j2 = job({ status: "processing", segments: segs });
  await advance(j2, r.deps);
  t.equal(j2.status, "completed");
  t.same(leftovers(), []);
  // Removed when the composition fails too.
  r.deps.compose.concatClips = async () => {
    throw new Error("ffmpeg exploded");
  };
  await t.rejects(advance(job({ status: "processing", segments: segs }), r.deps), /ffmpeg exploded/);
  t.same(leftovers(), []);
});
