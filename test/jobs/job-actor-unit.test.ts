// The JobActor (actors/job/job-actor.ts) in process, one turn at a time, on a
// host double that commits a turn's state only when it resolves and runs its
// afterCommit functions after that, with an injected clock and recording
// doubles (planner, directory, live events, webhook publisher, budget,
// metrics, video routing, file store, conversation calls, reminders, log).
// What it pins:
// - the definition: its type and initial state;
// - create: the stored job (every field), the plan asked, the watchdog and
//   first reminders, the directory entry written inside the turn and the
//   queued transition counted after it; a second create is a 409; under a
//   budget the estimate asked, the parts reserved (`job:<id>`, key budget
//   too) and stored open, none reserved without amounts, and released when
//   the create turn fails (even when the release fails);
// - get, cancel and delete: 404 for another organization or environment,
//   409 for cancelling a final job; a cancel cancels the provider tasks in
//   flight (a failing cancel is logged), fails the job `cancelled` and
//   announces it after the commit only (transition, snapshot, then event);
//   a delete publishes the job.failed event, calls the conversation back,
//   releases the open parts, clears both reminders, counts the files it
//   deleted, removes the entry and leaves the initial state, announcing no
//   snapshot of the job it removes;
// - step: nothing without a due step; the submission's reminder set before
//   the provider call; an arming this process made less than (or exactly)
//   60 s ago submits at once, any other run looks first (from armed_at); the
//   first poll after the previous segment's hint; a poll's wait scheduled
//   (never below 0); a change announced once committed, none when nothing
//   visible changed; the next segment armed when it becomes next (not
//   re-armed, not armed on a final job); a final job's event, callback and
//   release owed once, its snapshot written again after the commit;
// - failures on our side: counted, retried after base × 2^(n-1) capped at
//   60 s (1 s default), the job failed at exactly MAX_STEP_FAILURES with the
//   error's code and text (internal_error / "the job failed" otherwise); a
//   final job is only retried;
// - the parts of a job admitted before a restart held again once per process.
// Fast on purpose: the mutation run runs this file once per mutant.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { jobData as videoJob, segmentState } from "../support/job-data.ts";
import type { z } from "zod";
import { eraseDefinition, type ActorContext, type ActorRef, type AnyActorDefinition, type MethodInputs, type MethodOutputs } from "../../actors/actor.ts";
import { JobDirectory, type JobPlace } from "../../actors/job/directory.ts";
import type { JobEvent } from "../../actors/job/events.ts";
import { createJobActor, JOB_ACTOR, MAX_STEP_FAILURES, type CreateJobInput, type JobActorDeps } from "../../actors/job/job-actor.ts";
import type { HeldJobParts, HeldJobPlaces, JobBudget, JobShape } from "../../actors/job/job-budget.ts";
import { jobEventId } from "../../actors/job/job-steps.ts";
import { jobStateSchema, toPublicJob, type Job, type JobData, type JobState, type OpenAiVideoFields } from "../../actors/job/types.ts";
import type { Clock } from "../../core/clock.ts";
import type { DataStore } from "../../core/data-store.ts";
import { TroupeError } from "../../core/errors.ts";
import type { OrganizationEvent } from "../../core/organization-events.ts";
import type { FileStore, PutInput, StoredFile } from "../../media/file-store.ts";
import { Capabilities, mediaTools } from "../../media/media-tools.ts";
import { OutboundFetcher } from "../../media/outbound-fetch.ts";
import { Catalogue } from "../../providers/catalogue.ts";
import type { RoutingStrategy } from "../../providers/types.ts";
import type { Payer } from "../../providers/usage.ts";
import type { VideoSegmentRequest, VideoTask, VideoTaskStatus } from "../../providers/video.ts";
import type { ReservedPart } from "../../tenancy/ledger.ts";
import { recordingLog } from "../support/recording-log.ts";

const scratch = mkdtempSync(join(tmpdir(), "job-actor-unit-"));
t.teardown(() => rmSync(scratch, { recursive: true, force: true }));
const clipPath = join(scratch, "clip.mp4");
writeFileSync(clipPath, Buffer.alloc(100, 1));

const startMs = 1_764_790_000_000;
const iso = (ms: number) => new Date(ms).toISOString();
const watchdogMs = 30_000;
const jobId = "job_1";

class ManualClock implements Clock {
  ms = startMs;
  now(): number {
    return this.ms;
  }
}

type Req = VideoSegmentRequest & { routing_strategy: RoutingStrategy };
interface Reminder {
  name: string;
  due: number;
  period: number | undefined;
  method: string;
  input: unknown;
}
interface Called {
  type: string;
  id: string;
  method: string;
  input: unknown;
}

const task = (over: Partial<VideoTask> = {}): VideoTask => ({ provider: "prov", model: "vid-model", task_id: "task-1", poll_after_ms: 2500, duration_seconds: 4, ...over });

/** Everything the actor did outside its state, in order. */
interface Rig {
  clock: ManualClock;
  trail: string[];
  deps: JobActorDeps;
  planned: { model: string | null; strategy: RoutingStrategy; withImage: boolean }[];
  created: { place: JobPlace; job: Job; openai: OpenAiVideoFields | null }[];
  updated: { place: JobPlace; job: Job; openai: OpenAiVideoFields | null }[];
  removed: { place: JobPlace; id: string }[];
  events: JobEvent[];
  published: OrganizationEvent[];
  estimated: JobShape[];
  reserved: { payer: Payer; prefix: string; amounts: number[]; opts: { keyBudget?: boolean } | undefined }[];
  restored: { held: HeldJobPlaces; parts: ReservedPart[] }[];
  released: { held: HeldJobPlaces; ids: string[] }[];
  submits: Req[];
  finds: { req: Req; sinceMs: number }[];
  cancels: { task: VideoTask; signal: AbortSignal | undefined }[];
  deletedFiles: string[];
  reminders: Reminder[];
  calls: Called[];
  lines: ReturnType<typeof recordingLog>["lines"];
  // Behaviour, set per test.
  submitWith: () => Promise<VideoTask>;
  pollWith: () => Promise<VideoTaskStatus>;
  cancelWith: () => Promise<void>;
  publishWith: () => Promise<void>;
  createdWith: () => Promise<void>;
  updatedWith: () => Promise<void>;
  reserveWith: () => Promise<HeldJobParts | undefined>;
  restoreWith: () => Promise<void>;
  releaseWith: () => Promise<void>;
  putWith: () => Promise<void>;
}

function memoryFiles(r: Rig): FileStore {
  let n = 0;
  return {
    put: async (input: PutInput) => {
      await r.putWith();
      n += 1;
      return { id: `file_${n}`, bytes: 100, content_type: input.contentType, created_at: r.clock.ms } as unknown as StoredFile;
    },
    head: async () => undefined,
    get: async () => undefined,
    delete: async (id) => (r.trail.push(`delete-file:${id}`), r.deletedFiles.push(id), id.startsWith("kept") ? false : true),
    close: async () => undefined,
  };
}

interface RigOptions {
  budget?: boolean;
  estimate?: number[];
  metrics?: boolean;
  publisher?: boolean;
  retryBaseMs?: number;
  video?: boolean;
}

function rig(opts: RigOptions = {}): Rig {
  const { log, lines } = recordingLog();
  const r: Rig = {
    clock: new ManualClock(),
    trail: [],
    deps: undefined as unknown as JobActorDeps,
    planned: [],
    created: [],
    updated: [],
    removed: [],
    events: [],
    published: [],
    estimated: [],
    reserved: [],
    restored: [],
    released: [],
    submits: [],
    finds: [],
    cancels: [],
    deletedFiles: [],
    reminders: [],
    calls: [],
    lines,
    submitWith: async () => task(),
    pollWith: async () => ({ state: "running", progress: null, poll_after_ms: 7 }),
    cancelWith: async () => undefined,
    publishWith: async () => undefined,
    createdWith: async () => undefined,
    updatedWith: async () => undefined,
    reserveWith: async () => ({ project_id: "proj", period: "2025-12", api_key_id: "key", parts: [{ id: "p0", amount_nanos: 10 }, { id: "p1", amount_nanos: 20 }] }),
    restoreWith: async () => undefined,
    releaseWith: async () => undefined,
    putWith: async () => undefined,
  };
  class RecordingDirectory extends JobDirectory {
    override async created(place: JobPlace, job: Job, openai: OpenAiVideoFields | null = null): Promise<void> {
      r.trail.push(`directory-created:${job.status}`);
      r.created.push({ place, job, openai });
      await r.createdWith();
    }
    override async updated(place: JobPlace, job: Job, openai: OpenAiVideoFields | null = null): Promise<void> {
      r.trail.push(`directory:${job.status}`);
      r.updated.push({ place, job, openai });
      await r.updatedWith();
    }
    override async removed(place: JobPlace, id: string): Promise<void> {
      r.trail.push(`directory-removed:${id}`);
      r.removed.push({ place, id });
    }
  }
  /** What the ledger was handed, as it was then (the actor closes the parts after). */
  const copy = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;
  const budget: JobBudget = {
    reserveParts: async (payer, prefix, amounts, o) => (r.trail.push("reserve"), r.reserved.push({ payer, prefix, amounts, opts: o }), r.reserveWith()),
    restoreParts: async (held, parts) => (r.trail.push("restore"), r.restored.push(copy({ held, parts })), r.restoreWith()),
    releaseParts: async (held, ids) => (r.trail.push("release"), r.released.push(copy({ held, ids })), r.releaseWith()),
  };
  r.deps = {
    plan: (model, strategy, withImage) => (r.planned.push({ model, strategy, withImage }), { model: "planned-model", provider: "planned-provider" }),
    directory: new RecordingDirectory(undefined as unknown as DataStore),
    events: { publish: (event) => void (r.trail.push(`event:${event.job.status}`), r.events.push(event)), listen: async () => async () => undefined },
    ...(opts.publisher === false ? {} : { publisher: { publish: async (event: OrganizationEvent) => (r.trail.push(`publish:${event.type}`), await r.publishWith(), void r.published.push(event)) } }),
    watchdogMs,
    ...(opts.retryBaseMs === undefined ? {} : { retryBaseMs: opts.retryBaseMs }),
    ...(opts.budget ? { budget } : {}),
    ...(opts.estimate ? { estimate: (shape: JobShape) => (r.estimated.push(shape), opts.estimate ?? []) } : {}),
    ...(opts.metrics === false ? {} : { metrics: { jobTransition: (status) => void r.trail.push(`transition:${status}`) } }),
    video: {
      submitVideo: async (req) => (r.trail.push("submit"), r.submits.push(req), r.submitWith()),
      findVideo: async (req, sinceMs) => (r.trail.push("find"), r.finds.push({ req, sinceMs }), undefined),
      pollVideo: async () => (r.trail.push("poll"), r.pollWith()),
      cancelVideo: async (tk, ctx) => (r.trail.push(`cancel:${tk.task_id}`), r.cancels.push({ task: tk, signal: ctx.signal }), r.cancelWith()),
    },
    narrate: async () => Promise.reject(new Error("not used")),
    compose: { concatClips: async () => undefined, muxVoiceover: async () => undefined, extractLastFrame: async () => undefined },
    media: {
      files: memoryFiles(r),
      fetcher: new OutboundFetcher({ allowHosts: [], maxBytes: 1 << 20, timeoutMs: 1000 }),
      fileUrl: (id) => `http://troupe.test/v1/files/${id}`,
      ownFileId: () => undefined,
      capabilities: new Capabilities(opts.video === false ? [] : mediaTools),
    },
    catalogue: Catalogue.load([]),
    bill: async () => void r.trail.push("bill"),
    log,
    now: () => r.clock.ms,
  };
  return r;
}

/** One turn's context: reminders and calls recorded, afterCommit functions held until the host commits. */
class Turn implements ActorContext<unknown> {
  readonly type = JOB_ACTOR;
  readonly id: string;
  readonly clock: Clock;
  readonly ids = { uuid: () => "uuid" };
  readonly log: ActorContext<unknown>["log"];
  readonly committed: (() => unknown)[] = [];
  state: unknown;
  private readonly r: Rig;
  constructor(r: Rig, state: unknown, id: string) {
    this.r = r;
    this.id = id;
    this.state = state;
    this.clock = r.clock;
    this.log = r.deps.log;
  }
  call<CS, CI extends MethodInputs, CO extends MethodOutputs<CI>, K extends keyof CI & string>(callee: ActorRef<CS, CI, CO>, id: string, method: K, input: z.input<CI[K]>): Promise<CO[K]> {
    this.r.trail.push(`call:${method}`);
    this.r.calls.push({ type: callee.type, id, method, input });
    return Promise.resolve(null as unknown as CO[K]);
  }
  setTimer(): Promise<void> {
    return Promise.reject(new Error("no timers"));
  }
  clearTimer(): Promise<void> {
    return Promise.reject(new Error("no timers"));
  }
  async setReminder(name: string, due: number, period: number | undefined, method: string, input: unknown): Promise<void> {
    this.r.trail.push(`reminder:${name}:${due}`);
    this.r.reminders.push({ name, due, period, method, input });
  }
  async clearReminder(name: string): Promise<void> {
    this.r.trail.push(`clear:${name}`);
  }
  afterCommit(fn: () => unknown): void {
    this.committed.push(fn);
  }
}

/** A process hosting the actor: its own JobActor (armings, holds) over the state the host committed. */
class Host {
  readonly def: AnyActorDefinition;
  readonly r: Rig;
  state: JobState;
  readonly id: string;
  constructor(r: Rig, state: JobState = { job: null }, process?: AnyActorDefinition, id = jobId) {
    this.r = r;
    this.state = state;
    this.id = id;
    this.def = process ?? eraseDefinition(createJobActor(r.deps));
  }
  /** Another actor (id) of this process. */
  sibling(id: string): Host {
    return new Host(this.r, { job: null }, this.def, id);
  }
  /** The same stored state in a new process. */
  restart(): Host {
    return new Host(this.r, this.state);
  }
  get job(): JobData {
    if (!this.state.job) throw new Error("no job");
    return this.state.job;
  }
  /** Runs a turn: committed (and then its afterCommit functions run, a rejection recorded) only when it resolves. */
  async invoke(method: string, input: unknown): Promise<unknown> {
    const m = this.def.methods[method]!;
    const ctx = new Turn(this.r, JSON.parse(JSON.stringify(this.state)) as unknown, this.id);
    const result = await m.run(ctx, m.input.parse(input));
    this.state = jobStateSchema.parse(ctx.state);
    this.r.trail.push("commit");
    for (const fn of ctx.committed) {
      try {
        await fn();
      } catch (error) {
        this.r.trail.push(`after-commit-failed:${error instanceof Error ? error.message : String(error)}`);
      }
    }
    return result;
  }
  /** Runs a turn and throws its state away, as a host whose commit failed. */
  async uncommitted(method: string, input: unknown): Promise<void> {
    const m = this.def.methods[method]!;
    await m.run(new Turn(this.r, JSON.parse(JSON.stringify(this.state)) as unknown, this.id), m.input.parse(input));
  }
}

const owner = { organization_id: "org", project_id: "proj", environment_id: "env" };
const payer: Payer = { ...owner, api_key_id: "key", live: true };
const createInput = (over: Partial<CreateJobInput> = {}): CreateJobInput => ({
  owner,
  payer,
  prompt: "a lighthouse",
  duration_seconds: 4,
  narration_text: null,
  scenes: null,
  model: "asked-model",
  routing_strategy: "cost",
  image: null,
  callback: null,
  ...over,
});
const caller = { organization_id: "org" };

const segment = segmentState;
const jobData = (over: Partial<JobData> = {}): JobData =>
  videoJob({ id: jobId, owner, payer, requested_model: null, created_at: iso(startMs - 100_000), updated_at: iso(startMs - 100_000), ...over });
const hostWith = (r: Rig, job: JobData) => new Host(r, { job });
/** A job with segment 0 in flight at the provider. */
const processing = (over: Partial<JobData> = {}) => jobData({ status: "processing", segments: [segment(0, { status: "processing", task: task(), submissions: 1, armed_at: startMs - 50_000 })], ...over });
const completed = (over: Partial<JobData> = {}) =>
  jobData({
    status: "completed",
    segments: [segment(0, { status: "completed", progress: 1, task: task(), submissions: 1, file_id: "clip_0", billed: true })],
    result_file_id: "result_1",
    result_url: "http://troupe.test/v1/files/result_1",
    ...over,
  });

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}
function troupe(error: unknown): { code: string; message: string; details: unknown } {
  if (!(error instanceof TroupeError)) throw new Error(`not a TroupeError: ${String(error)}`);
  return { code: error.code, message: error.message, details: error.details };
}

t.test("the definition", async (t) => {
  const def = createJobActor(rig().deps);
  t.equal(JOB_ACTOR, "JobActor");
  t.equal(def.type, "JobActor");
  t.same(def.initialState(), { job: null });
  t.equal(MAX_STEP_FAILURES, 5);
});

t.test("create: the job stored, its reminders, its directory entry inside the turn, the transition after it", async (t) => {
  const r = rig();
  const host = new Host(r);
  const answer = await host.invoke("create", createInput());
  const at = iso(startMs);
  const expected: JobData = {
    id: jobId,
    owner,
    payer,
    type: "text_to_video",
    status: "queued",
    requested_model: "asked-model",
    routing_strategy: "cost",
    model: "planned-model",
    provider: "planned-provider",
    prompt: "a lighthouse",
    duration_seconds: 4,
    narration_text: null,
    image: null,
    segments: [segment(0, { prompt: "a lighthouse", armed_at: startMs })],
    narration_file_id: null,
    result_file_id: null,
    result_url: null,
    error: null,
    callback: null,
    openai_video: { seconds: "4", size: null },
    budget: null,
    event_published: false,
    callback_done: false,
    next_step_at: startMs,
    step_failures: 0,
    snapshot_dirty: false,
    created_at: at,
    updated_at: at,
  };
  t.same(host.state, { job: expected }, "every field");
  t.same(answer, toPublicJob(expected), "answers the public job");
  t.same(r.planned, [{ model: "asked-model", strategy: "cost", withImage: false }]);
  t.same(r.reminders, [
    { name: "watchdog", due: watchdogMs, period: watchdogMs, method: "step", input: {} },
    { name: "next", due: 0, period: undefined, method: "step", input: {} },
  ]);
  t.same(r.created, [{ place: owner, job: toPublicJob(expected), openai: { seconds: "4", size: null } }]);
  t.same(r.trail, ["reminder:watchdog:30000", "reminder:next:0", "directory-created:queued", "commit", "transition:queued"], "the entry inside the turn, the transition after its commit, no live event");
  t.same(r.reserved, [], "no budget, nothing reserved");

  const again = await rejection(host.invoke("create", createInput()));
  t.same(troupe(again), { code: "conflict", message: "job already exists", details: undefined });
  t.equal(r.planned.length, 1, "a second create plans nothing");
});

t.test("create: scenes, an image, the OpenAI fields given, no metrics", async (t) => {
  const r = rig({ metrics: false });
  const host = new Host(r);
  await host.invoke("create", createInput({ scenes: ["one", "two", "three"], duration_seconds: 2, model: null, routing_strategy: "auto" }));
  t.same(host.job.segments.map((s) => [s.index, s.prompt, s.armed_at]), [
    [0, "one", startMs],
    [1, "two", null],
    [2, "three", null],
  ], "one segment per scene, the first armed");
  t.same(host.job.openai_video, { seconds: "6", size: null }, "duration × scenes");
  t.equal(host.job.type, "text_to_video");
  t.equal(host.job.requested_model, null);
  t.same(r.trail.slice(-1), ["commit"], "no metrics: nothing counted, nothing thrown");

  const r2 = rig();
  const image = new Host(r2);
  const openai = { seconds: "8", size: "1280x720" };
  await image.invoke("create", createInput({ image: { file_id: "img_1", content_type: "image/png" }, openai_video: openai, callback: { conversation_id: "conv", tool_call_id: "call_1" } }));
  t.equal(image.job.type, "image_to_video");
  t.same(image.job.image, { file_id: "img_1", content_type: "image/png" });
  t.same(image.job.openai_video, openai, "kept as given");
  t.same(image.job.callback, { conversation_id: "conv", tool_call_id: "call_1" });
  t.same(r2.planned, [{ model: "asked-model", strategy: "cost", withImage: true }]);
  t.same(r2.created[0]!.openai, openai);
});

t.test("create under a budget: the estimate, the parts reserved and stored open", async (t) => {
  const r = rig({ budget: true, estimate: [10, 20] });
  const host = new Host(r);
  await host.invoke("create", createInput({ scenes: ["a", "b"], narration_text: "hi" }));
  t.same(r.estimated, [
    {
      owner,
      payer,
      prompt: "a lighthouse",
      duration_seconds: 4,
      narration_text: "hi",
      scenes: ["a", "b"],
      model: "asked-model",
      routing_strategy: "cost",
      image: null,
      callback: null,
      openai_video: null,
      withImage: false,
      segments: 2,
    },
  ]);
  t.same(r.reserved, [{ payer, prefix: `job:${jobId}`, amounts: [10, 20], opts: { keyBudget: true } }]);
  t.same(host.job.budget, { project_id: "proj", period: "2025-12", api_key_id: "key", parts: [{ id: "p0", amount_nanos: 10, open: true }, { id: "p1", amount_nanos: 20, open: true }] });
  t.same(r.trail.slice(0, 2), ["reserve", "reminder:watchdog:30000"], "reserved before anything else");

  // Held by this process: its steps do not hold the parts again.
  await host.invoke("step", {});
  t.same(r.restored, [], "made here: not restored");
  // Another process holds them again, once.
  const other = host.restart();
  r.clock.ms = host.job.next_step_at;
  r.pollWith = async () => ({ state: "running", progress: 0.2, poll_after_ms: 5 });
  await other.invoke("step", {});
  t.same(r.restored, [{ held: host.job.budget, parts: [{ id: "p0", amount_nanos: 10, open: true }, { id: "p1", amount_nanos: 20, open: true }] }]);
  r.clock.ms = other.job.next_step_at;
  await other.invoke("step", {});
  t.equal(r.restored.length, 1, "once per process");
});

t.test("create under a budget: nothing reserved without amounts or a budget, or when the ledger holds nothing", async (t) => {
  const empty = rig({ budget: true, estimate: [] });
  await new Host(empty).invoke("create", createInput());
  t.same(empty.reserved, [], "no amounts: nothing reserved");

  const unlimited = rig({ budget: true, estimate: [5] });
  unlimited.reserveWith = async () => undefined;
  const host = new Host(unlimited);
  await host.invoke("create", createInput());
  t.equal(unlimited.reserved.length, 1);
  t.equal(host.job.budget, null, "no hard limit: nothing held");
  await host.restart().invoke("step", {});
  t.same(unlimited.restored, [], "no parts: nothing restored");

  const unestimated = rig({ budget: true });
  const bare = new Host(unestimated);
  await bare.invoke("create", createInput());
  t.same(unestimated.reserved, [], "no estimate: nothing reserved");
  t.equal(bare.job.budget, null);

  const image = rig({ budget: true, estimate: [5] });
  await new Host(image).invoke("create", createInput({ image: { file_id: "img", content_type: "image/png" } }));
  t.equal(image.estimated[0]!.withImage, true, "an image job is estimated as one");
  t.equal(image.estimated[0]!.segments, 1);

  const noBudget = rig({ estimate: [5] });
  const plain = new Host(noBudget);
  await plain.invoke("create", createInput());
  t.equal(plain.job.budget, null);
  t.same(noBudget.estimated.length, 1);
});

t.test("step: parts held again only where there is a ledger and an open part", async (t) => {
  const closed = rig({ budget: true });
  await hostWith(closed, processing({ budget: { project_id: "proj", period: "p", parts: [{ id: "p0", amount_nanos: 1, open: false }] } })).invoke("step", {});
  t.same(closed.restored, [], "no open part: nothing restored");
  t.same(closed.trail, ["poll", "reminder:next:7", "commit"]);

  const unbudgeted = rig();
  const host = hostWith(unbudgeted, processing({ budget: { project_id: "proj", period: "p", parts: [{ id: "p0", amount_nanos: 1, open: true }] } }));
  await host.invoke("step", {});
  t.equal(host.job.step_failures, 0, "no ledger: the step runs");
  t.same(unbudgeted.trail, ["poll", "reminder:next:7", "commit"]);
});

t.test("create: a turn that fails releases what it reserved and throws its own error", async (t) => {
  const r = rig({ budget: true, estimate: [10, 20] });
  r.createdWith = async () => Promise.reject(new Error("directory down"));
  const host = new Host(r);
  const error = await rejection(host.invoke("create", createInput()));
  t.equal((error as Error).message, "directory down");
  t.same(r.released, [{ held: { project_id: "proj", period: "2025-12", api_key_id: "key", parts: [{ id: "p0", amount_nanos: 10 }, { id: "p1", amount_nanos: 20 }] }, ids: ["p0", "p1"] }]);
  t.same(host.state, { job: null }, "nothing committed");
  t.notOk(r.trail.includes("commit"));

  r.releaseWith = async () => Promise.reject(new Error("ledger down"));
  t.equal(((await rejection(host.invoke("create", createInput()))) as Error).message, "directory down", "a failed release does not hide the error");
  t.equal(r.released.length, 2);

  const plain = rig();
  plain.createdWith = async () => Promise.reject(new Error("directory down"));
  t.equal(((await rejection(new Host(plain).invoke("create", createInput()))) as Error).message, "directory down");
  t.same(plain.released, [], "nothing held, nothing released");

  const unheld = rig({ budget: true });
  unheld.createdWith = async () => Promise.reject(new Error("directory down"));
  t.equal(((await rejection(new Host(unheld).invoke("create", createInput()))) as Error).message, "directory down");
  t.same(unheld.released, [], "a ledger but nothing held: nothing released");
});

t.test("get: the caller's job only", async (t) => {
  const r = rig();
  const host = hostWith(r, jobData());
  t.same(await host.invoke("get", { organization_id: "org" }), toPublicJob(jobData()));
  t.same(await host.invoke("get", { organization_id: "org", environment_id: "env" }), toPublicJob(jobData()));
  for (const other of [{ organization_id: "other" }, { organization_id: "org", environment_id: "other-env" }, { organization_id: "other", environment_id: "env" }]) {
    t.same(troupe(await rejection(host.invoke("get", other))), { code: "not_found", message: "job not found", details: undefined }, JSON.stringify(other));
  }
  t.same(troupe(await rejection(new Host(r).invoke("get", caller))), { code: "not_found", message: "job not found", details: undefined }, "no job");
});

t.test("cancel: a queued job fails cancelled, announced once committed", async (t) => {
  const r = rig();
  const host = hostWith(r, jobData({ segments: [segment(0, { armed_at: 5 }), segment(1)], next_step_at: startMs + 9_000 }));
  r.clock.ms = startMs + 5_000;
  const answer = await host.invoke("cancel", caller);
  const job = host.job;
  t.equal(job.status, "failed");
  t.same(job.error, { code: "cancelled", message: "the job was cancelled" });
  t.same(job.segments.map((s) => s.status), ["cancelled", "cancelled"]);
  t.equal(job.updated_at, iso(startMs + 5_000), "updated now");
  t.equal(job.next_step_at, startMs + 5_000, "its last step due now");
  t.same(answer, toPublicJob(job));
  t.same(r.cancels, [], "nothing in flight to cancel");
  t.same(r.reminders, [{ name: "next", due: 0, period: undefined, method: "step", input: {} }]);
  t.same(r.trail, ["reminder:next:0", "commit", "transition:failed", "directory:failed", "event:failed"], "after the commit: the transition, the snapshot, then the event");
  t.same(r.updated, [{ place: owner, job: toPublicJob(job), openai: null }]);
  t.same(r.events, [{ type: "job.updated", job_id: jobId, job: toPublicJob(job) }]);

  const unmetered = rig({ metrics: false });
  await hostWith(unmetered, jobData()).invoke("cancel", caller);
  t.same(unmetered.trail, ["reminder:next:0", "commit", "directory:failed", "event:failed"], "no metrics: nothing counted, nothing thrown");

  t.same(troupe(await rejection(host.invoke("cancel", caller))), { code: "conflict", message: "the job is already failed", details: { status: "failed" } });
  t.same(troupe(await rejection(hostWith(r, completed()).invoke("cancel", caller))), { code: "conflict", message: "the job is already completed", details: { status: "completed" } });
  t.same(troupe(await rejection(hostWith(r, jobData()).invoke("cancel", { organization_id: "org", environment_id: "prod" }))), { code: "not_found", message: "job not found", details: undefined });
  t.same(troupe(await rejection(new Host(r).invoke("cancel", caller))), { code: "not_found", message: "job not found", details: undefined });
});

t.test("cancel: the provider tasks in flight are cancelled, a failed cancel logged", async (t) => {
  const r = rig();
  const inFlight = task({ task_id: "t-0" });
  const host = hostWith(r, jobData({ status: "processing", segments: [segment(0, { status: "completed", task: task({ task_id: "done" }), file_id: "c0" }), segment(1, { status: "processing", task: inFlight }), segment(2, { status: "processing" }), segment(3)] }));
  const refused = new Error("provider says no");
  r.cancelWith = async () => Promise.reject(refused);
  await host.invoke("cancel", caller);
  t.same(r.cancels.map((c) => c.task), [inFlight], "only the processing segment with a task");
  t.ok(r.cancels[0]!.signal instanceof AbortSignal, "with a signal");
  t.notOk(r.cancels[0]!.signal?.aborted);
  t.same(host.job.segments.map((s) => s.status), ["completed", "cancelled", "failed", "cancelled"]);
  t.same(r.lines, [{ level: "warn", msg: "provider cancel failed", fields: { job_id: jobId, segment: 1, error: refused } }]);
});

t.test("delete: an unfinished job is cancelled, owed its event and callback, and removed", async (t) => {
  const r = rig({ budget: true });
  const budget = { project_id: "proj", period: "2025-12", parts: [{ id: "p0", amount_nanos: 10, open: false }, { id: "p1", amount_nanos: 20, open: true }] };
  const job = processing({
    callback: { conversation_id: "conv_1", tool_call_id: "call_1" },
    budget,
    image: { file_id: "img", content_type: "image/png" },
    segments: [segment(0, { status: "completed", task: task(), file_id: "clip_0", frame_file_id: "kept_frame" }), segment(1, { status: "processing", task: task({ task_id: "t-1" }) })],
  });
  const host = hostWith(r, job);
  r.clock.ms = startMs + 1_000;
  const answer = await host.invoke("delete", caller);
  t.same(answer, { id: jobId, deleted: true, files_deleted: 2 }, "the files the store had (kept_frame it did not)");
  t.same(host.state, { job: null }, "the initial state");
  t.same(r.deletedFiles, ["img", "clip_0", "kept_frame"]);
  t.same(r.trail, [
    "cancel:t-1",
    "publish:job.failed",
    "call:videoFinished",
    "release",
    "clear:watchdog",
    "clear:next",
    "delete-file:img",
    "delete-file:clip_0",
    "delete-file:kept_frame",
    `directory-removed:${jobId}`,
    "commit",
    "transition:failed",
    "event:failed",
  ], "no snapshot of a job leaving the directory");
  t.same(r.removed, [{ place: owner, id: jobId }]);
  t.same(r.released, [{ held: { ...budget, parts: [{ id: "p0", amount_nanos: 10, open: false }, { id: "p1", amount_nanos: 20, open: true }] }, ids: ["p1"] }], "the open parts only");
  t.same(r.calls, [{ type: "ConversationActor", id: "conv_1", method: "videoFinished", input: { job_id: jobId, tool_call_id: "call_1", result_url: null, error: { code: "cancelled", message: "the job was cancelled" } } }]);
  t.equal(r.published.length, 1);
  const event = r.published[0]!;
  t.equal(event.id, jobEventId(jobId, "job.failed"));
  t.same(event, {
    id: jobEventId(jobId, "job.failed"),
    type: "job.failed",
    organization_id: "org",
    project_id: "proj",
    environment_id: "env",
    created_at: iso(startMs + 1_000),
    data: { job: r.events[0]!.job },
  });
  t.equal(r.events[0]!.job.status, "failed");

  t.same(troupe(await rejection(host.invoke("delete", caller))), { code: "not_found", message: "job not found", details: undefined });
  t.same(troupe(await rejection(hostWith(r, jobData()).invoke("delete", { organization_id: "else" }))), { code: "not_found", message: "job not found", details: undefined });
});

t.test("delete: a final job whose steps are done announces nothing", async (t) => {
  const r = rig({ budget: true });
  const host = hostWith(r, completed({ event_published: true, callback: { conversation_id: "c", tool_call_id: "x" }, callback_done: true, budget: { project_id: "proj", period: "p", parts: [{ id: "p0", amount_nanos: 1, open: false }] } }));
  t.same(await host.invoke("delete", caller), { id: jobId, deleted: true, files_deleted: 2 });
  t.same(r.trail, ["clear:watchdog", "clear:next", "delete-file:result_1", "delete-file:clip_0", `directory-removed:${jobId}`, "commit"]);
  t.same(r.released, [], "no open part, nothing released");
});

t.test("step: nothing to do without a job or before its step is due", async (t) => {
  const r = rig();
  const empty = new Host(r);
  await empty.invoke("step", {});
  t.same(r.trail, ["clear:watchdog", "commit"], "no job: the watchdog goes");
  t.same(empty.state, { job: null });

  const r2 = rig();
  const early = hostWith(r2, processing({ next_step_at: startMs + 1 }));
  await early.invoke("step", {});
  t.same(r2.trail, ["commit"], "a watchdog before the next step does nothing");
  t.same(early.job, processing({ next_step_at: startMs + 1 }));

  const due = hostWith(r2, processing({ next_step_at: startMs }));
  await due.invoke("step", {});
  t.ok(r2.trail.includes("poll"), "due now: it runs");
});

t.test("step: a submission armed here goes straight to the provider, its reminder set first", async (t) => {
  const r = rig();
  const host = new Host(r);
  await host.invoke("create", createInput());
  r.trail.length = 0;
  r.reminders.length = 0;
  r.clock.ms = startMs + 60_000;
  r.submitWith = async () => task({ poll_after_ms: 4321, provider: "vidco", model: "v2" });
  await host.invoke("step", {});
  t.same(r.trail, ["reminder:next:1000", "submit", "commit", "transition:processing", "directory:processing", "event:processing"], "no lookup; the reminder before the provider call; announced after the commit");
  t.same(r.reminders, [{ name: "next", due: 1_000, period: undefined, method: "step", input: {} }], "the first poll after 1 s: no hint yet");
  const job = host.job;
  t.equal(job.next_step_at, 0, "the reminder set before the call is the next step");
  t.equal(job.status, "processing");
  t.equal(job.provider, "vidco");
  t.equal(job.updated_at, iso(startMs + 60_000));
  t.equal(job.step_failures, 0);
  t.same(r.submits, [{ model: "asked-model", prompt: "a lighthouse", duration_seconds: 4, routing_strategy: "cost" }]);
});

t.test("step: any other run of a submission looks for its task first", async (t) => {
  // Another process.
  const r = rig();
  const host = new Host(r);
  await host.invoke("create", createInput());
  await host.restart().invoke("step", {});
  t.same(r.finds.map((f) => f.sinceMs), [startMs], "from armed_at");
  t.same(r.trail.slice(-7), ["reminder:next:1000", "find", "submit", "commit", "transition:processing", "directory:processing", "event:processing"]);

  // The same process, an arming too old to trust.
  const old = rig();
  const oldHost = new Host(old);
  await oldHost.invoke("create", createInput());
  old.clock.ms = startMs + 60_001;
  await oldHost.invoke("step", {});
  t.equal(old.finds.length, 1, "armed more than 60 s ago: looks");

  // A run after one that did not commit.
  const again = rig();
  const againHost = new Host(again);
  await againHost.invoke("create", createInput());
  await againHost.uncommitted("step", {});
  t.same(again.finds, [], "the first run submits at once");
  await againHost.invoke("step", {});
  t.equal(again.finds.length, 1, "the second run of the same arming looks first");
  t.equal(again.submits.length, 2);
});

t.test("step: an arming is trusted for its own job only", async (t) => {
  const r = rig();
  const a = new Host(r);
  await a.invoke("create", createInput());
  // Job b, made by another process, steps in this one (which armed job a's segment 0 at the same time).
  const elsewhere = new Host(r, { job: null }, undefined, "job_2");
  await elsewhere.invoke("create", createInput());
  const b = a.sibling("job_2");
  b.state = elsewhere.state;
  await b.invoke("step", {});
  t.same(r.finds.map((f) => f.sinceMs), [startMs], "job b looks first");
  await a.invoke("step", {});
  t.equal(r.finds.length, 1, "job a, armed here, does not");
  t.equal(r.submits.length, 2);
});

t.test("step: the first poll after the previous segment's hint, else the segment's own", async (t) => {
  const r = rig();
  const host = hostWith(r, jobData({ segments: [segment(0, { status: "completed", task: task({ poll_after_ms: 4321 }), file_id: "c0" }), segment(1)] }));
  await host.invoke("step", {});
  t.same(r.reminders[0], { name: "next", due: 4321, period: undefined, method: "step", input: {} });

  const r2 = rig();
  await hostWith(r2, jobData({ segments: [segment(0, { task: task({ poll_after_ms: 777 }) })] })).invoke("step", {});
  t.equal(r2.reminders[0]!.due, 777, "a pending segment that kept a task: its own hint");

  const r3 = rig();
  const untasked = hostWith(r3, jobData({ segments: [segment(0, { status: "completed", file_id: "c0" }), segment(1)] }));
  await untasked.invoke("step", {});
  t.same(r3.reminders.map((x) => x.due), [1_000], "a previous segment without a task: 1 s");
  t.same([untasked.job.segments[1]!.status, untasked.job.step_failures], ["processing", 0], "and the segment submitted");
});

t.test("step: a poll schedules the provider's wait, announcing only what callers see change", async (t) => {
  const r = rig();
  const host = hostWith(r, processing({ step_failures: 3 }));
  r.pollWith = async () => ({ state: "running", progress: 0.5, poll_after_ms: 7 });
  await host.invoke("step", {});
  t.same(r.trail, ["poll", "reminder:next:7", "commit", "directory:processing", "event:processing"], "progress only: no transition");
  t.equal(host.job.next_step_at, startMs + 7);
  t.equal(host.job.step_failures, 0, "a step that worked resets the count");
  t.equal(host.job.updated_at, iso(startMs));
  t.equal(r.events[0]!.job.progress, 0.45);

  const quiet = rig();
  const still = hostWith(quiet, processing());
  quiet.clock.ms = startMs + 10;
  await still.invoke("step", {});
  t.same(quiet.trail, ["poll", "reminder:next:7", "commit"], "nothing visible changed: nothing announced");
  t.equal(still.job.updated_at, iso(startMs - 100_000), "nor updated_at");
  t.equal(still.job.next_step_at, startMs + 17);

  const hurried = rig();
  hurried.pollWith = async () => ({ state: "running", progress: null, poll_after_ms: -5 });
  const soon = hostWith(hurried, processing());
  await soon.invoke("step", {});
  t.same(hurried.reminders, [{ name: "next", due: 0, period: undefined, method: "step", input: {} }], "never a negative due time");
  t.equal(soon.job.next_step_at, startMs - 5);
});

t.test("step: the next segment is armed when it becomes next, then submitted here at once", async (t) => {
  const r = rig();
  const host = hostWith(r, processing({ segments: [segment(0, { status: "processing", task: task(), submissions: 1 }), segment(1)] }));
  r.pollWith = async () => ({ state: "succeeded", clip: { kind: "file", path: clipPath } });
  r.clock.ms = startMs + 3;
  await host.invoke("step", {});
  t.equal(host.job.segments[0]!.status, "completed");
  t.equal(host.job.segments[1]!.armed_at, startMs + 3, "armed now");
  t.same(r.reminders.map((x) => x.due), [0], "the next step at once");
  t.equal(host.job.next_step_at, startMs + 3);
  r.trail.length = 0;
  await host.invoke("step", {});
  t.same(r.trail.slice(0, 2), ["reminder:next:2500", "submit"], "armed in this process: no lookup");

  // A segment armed already keeps its arming (and, not armed here, looks first).
  const r2 = rig();
  const pre = hostWith(r2, processing({ segments: [segment(0, { status: "processing", task: task(), submissions: 1 }), segment(1, { armed_at: 123 })] }));
  r2.pollWith = async () => ({ state: "succeeded", clip: { kind: "file", path: clipPath } });
  await pre.invoke("step", {});
  t.equal(pre.job.segments[1]!.armed_at, 123, "not armed again");
  await pre.invoke("step", {});
  t.same(r2.finds.map((f) => f.sinceMs), [123]);
});

t.test("step: a job that fails in its step is not armed, announced and stepped at once", async (t) => {
  const r = rig({ video: false });
  const host = hostWith(r, jobData({ status: "processing", segments: [segment(0, { status: "completed", task: task(), file_id: "c0" }), segment(1)] }));
  await host.invoke("step", {});
  t.equal(host.job.status, "failed");
  t.equal(host.job.error?.code, "capability_unavailable");
  t.equal(host.job.segments[1]!.status, "cancelled");
  t.equal(host.job.segments[1]!.armed_at, null, "a final job arms nothing");
  t.same(r.trail, ["reminder:next:2500", "reminder:next:0", "commit", "transition:failed", "directory:failed", "event:failed"]);
  t.equal(host.job.next_step_at, startMs);

  const refused = rig();
  refused.submitWith = async () => Promise.reject(new TroupeError("no_provider_available", "none left"));
  const job = hostWith(refused, jobData());
  await job.invoke("step", {});
  t.same(job.job.error, { code: "no_provider_available", message: "none left" });
  t.same(refused.trail, ["reminder:next:1000", "find", "submit", "reminder:next:0", "commit", "transition:failed", "directory:failed", "event:failed"]);
});

t.test("step: a final job owes its event, callback and release once, its snapshot written again", async (t) => {
  const r = rig({ budget: true });
  const budget = { project_id: "proj", period: "p", parts: [{ id: "p0", amount_nanos: 1, open: true }] };
  const host = hostWith(r, completed({ callback: { conversation_id: "conv_9", tool_call_id: "call_9" }, budget, step_failures: 2 }));
  r.clock.ms = startMs + 50;
  await host.invoke("step", {});
  const job = host.job;
  t.same(r.trail, ["publish:job.completed", "call:videoFinished", "release", "clear:watchdog", "commit", "directory:completed"], "the snapshot after the commit, no event or transition");
  t.same(r.published, [
    {
      id: jobEventId(jobId, "job.completed"),
      type: "job.completed",
      organization_id: "org",
      project_id: "proj",
      environment_id: "env",
      created_at: iso(startMs - 100_000),
      data: { job: toPublicJob(completed({ callback: { conversation_id: "conv_9", tool_call_id: "call_9" }, budget })) },
    },
  ]);
  t.same(r.calls, [{ type: "ConversationActor", id: "conv_9", method: "videoFinished", input: { job_id: jobId, tool_call_id: "call_9", result_url: "http://troupe.test/v1/files/result_1", error: null } }]);
  t.same(r.released, [{ held: budget, ids: ["p0"] }]);
  t.same(r.updated, [{ place: owner, job: toPublicJob(job), openai: null }]);
  t.equal(job.event_published, true);
  t.equal(job.callback_done, true);
  t.same(job.budget?.parts, [{ id: "p0", amount_nanos: 1, open: false }], "released parts are closed");
  t.equal(job.step_failures, 0);
  t.equal(job.next_step_at, startMs + 50 + watchdogMs, "the watchdog's time");

  r.trail.length = 0;
  r.clock.ms = job.next_step_at;
  await host.invoke("step", {});
  t.same(r.trail, ["clear:watchdog", "commit", "directory:completed"], "each owed once");

  const failed = rig({ publisher: false });
  const f = hostWith(failed, jobData({ status: "failed", error: { code: "x", message: "y" }, budget: { project_id: "proj", period: "p", parts: [{ id: "p0", amount_nanos: 1, open: true }] } }));
  await f.invoke("step", {});
  t.equal(f.job.event_published, true, "no publisher: nothing to publish");
  t.same(f.job.budget?.parts.map((p) => p.open), [false], "no ledger: the parts are closed all the same");
  const published = rig();
  await hostWith(published, jobData({ status: "failed", error: { code: "x", message: "y" } })).invoke("step", {});
  t.same(published.published.map((e) => [e.type, e.id]), [["job.failed", jobEventId(jobId, "job.failed")]]);
});

t.test("step: a snapshot that cannot be written still goes out as an event", async (t) => {
  const r = rig();
  r.updatedWith = async () => Promise.reject(new Error("store down"));
  r.pollWith = async () => ({ state: "running", progress: 0.5, poll_after_ms: 7 });
  await hostWith(r, processing()).invoke("step", {});
  t.same(r.trail.slice(-4), ["commit", "directory:processing", "event:processing", "after-commit-failed:store down"]);
});

t.test("step: failures on our side are retried with a doubling wait, then fail the job", async (t) => {
  const base = rig({ retryBaseMs: 100 });
  base.pollWith = async () => ({ state: "succeeded", clip: { kind: "file", path: clipPath } });
  base.putWith = async () => Promise.reject(new Error("disk full"));
  const host = hostWith(base, processing({ step_failures: 0 }));
  const waits: number[] = [];
  for (let n = 1; n < MAX_STEP_FAILURES; n += 1) {
    base.reminders.length = 0;
    base.clock.ms = host.job.next_step_at;
    await host.invoke("step", {});
    t.equal(host.job.step_failures, n);
    t.equal(host.job.status, "processing", `still processing after ${n}`);
    t.equal(host.job.next_step_at, base.clock.ms + waits.concat(100 * 2 ** (n - 1)).at(-1)!);
    waits.push(base.reminders[0]!.due);
  }
  t.same(waits, [100, 200, 400, 800]);
  const warn = base.lines.find((l) => l.msg === "job step failed");
  t.same(warn, { level: "warn", msg: "job step failed", fields: { job_id: jobId, failures: 1, error: warn?.fields?.["error"] } });
  t.equal((warn?.fields?.["error"] as Error).message, "disk full");
  base.trail.length = 0;
  base.reminders.length = 0;
  base.clock.ms = host.job.next_step_at;
  await host.invoke("step", {});
  t.equal(host.job.step_failures, MAX_STEP_FAILURES);
  t.equal(host.job.status, "failed", `failed at ${MAX_STEP_FAILURES}`);
  t.same(host.job.error, { code: "internal_error", message: "disk full" });
  t.same(base.reminders.map((x) => x.due), [0]);
  t.same(base.trail.slice(-4), ["commit", "transition:failed", "directory:failed", "event:failed"]);

  const plain = rig();
  plain.pollWith = async () => ({ state: "succeeded", clip: { kind: "file", path: clipPath } });
  plain.putWith = async () => Promise.reject(new Error("disk full"));
  await hostWith(plain, processing()).invoke("step", {});
  t.same(plain.reminders.map((x) => x.due), [1_000], "1 s by default");
});

t.test("step: the job fails with the error's own code, or internal_error and a generic text", async (t) => {
  const r = rig({ budget: true });
  const budget = { project_id: "proj", period: "p", parts: [{ id: "p0", amount_nanos: 1, open: true }] };
  r.restoreWith = async () => Promise.reject(new TroupeError("service_unavailable", "ledger down"));
  const host = hostWith(r, processing({ budget, step_failures: MAX_STEP_FAILURES - 1 }));
  await host.invoke("step", {});
  t.same(host.job.error, { code: "service_unavailable", message: "ledger down" });

  const odd = rig({ budget: true });
  odd.restoreWith = async () => Promise.reject("no reason");
  const oddHost = hostWith(odd, processing({ budget, step_failures: MAX_STEP_FAILURES - 1 }));
  await oddHost.invoke("step", {});
  t.same(oddHost.job.error, { code: "internal_error", message: "the job failed" });
});

t.test("step: a final job whose owed steps fail is only retried, the wait capped at 60 s", async (t) => {
  const r = rig();
  r.publishWith = async () => Promise.reject(new Error("webhooks down"));
  const host = hostWith(r, completed({ step_failures: 5 }));
  await host.invoke("step", {});
  t.equal(host.job.status, "completed", "a final job stays as it is");
  t.equal(host.job.error, null);
  t.equal(host.job.step_failures, 6);
  t.equal(host.job.event_published, false);
  t.same(r.reminders.map((x) => x.due), [32_000], "1 s × 2^5");
  t.same(r.trail, ["publish:job.completed", "reminder:next:32000", "commit"], "nothing announced");
  r.reminders.length = 0;
  r.clock.ms = host.job.next_step_at;
  await host.invoke("step", {});
  t.same(r.reminders.map((x) => x.due), [60_000], "capped");
});
