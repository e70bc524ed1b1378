// JobActor: one per video job id. Thin by design (the work is injected): creation,
// cancellation and the step driver; the work of each step is in
// job-steps.ts. The job never runs in an in-memory loop: every step is a
// turn started by a durable reminder, so a killed process resumes the job
// from its last recorded step. Two reminders drive it:
// - `next`, one-shot, due when the next step is (the provider's poll hint);
// - `watchdog`, periodic: a reminder is consumed when it fires, before its
//   turn runs, so a process killed mid-step would otherwise leave nothing
//   scheduled. A watchdog firing before `next_step_at` does nothing.
// A submission must not reach the provider twice, yet a kill between the
// provider's answer and the turn's commit loses the task. So a segment is
// "armed" (armed_at) by the turn that makes it the next to submit, and this
// process remembers the arming: the submitting turn that finds its own
// arming in memory knows no earlier run of it reached the provider and
// submits at once; any other run (after a crash, on another replica, a
// retry) first asks the provider for a task made since armed_at.
import { z } from "zod";
import { isoTime } from "../../core/clock.ts";
import { isTroupeError, TroupeError } from "../../core/errors.ts";
import type { Metrics } from "../../core/metrics.ts";
import { noEvents, type EventPublisher } from "../../core/organization-events.ts";
import { routingStrategySchema, type RoutingStrategy } from "../../providers/types.ts";
import { payerSchema } from "../../providers/usage.ts";
import { actorRef, defineActor, type ActorContext } from "../actor.ts";
import type { ConversationActorDefinition } from "../conversation/conversation-actor.ts";
import { ownerSchema } from "../conversation/types.ts";
import type { JobDirectory } from "./directory.ts";
import type { JobEventBus } from "./events.ts";
import { openParts, type JobBudget, type JobShape } from "./job-budget.ts";
import { advance, failJob, jobEventId, segmentToSubmit, type StepDeps } from "./job-steps.ts";
import { isFinal, jobCallbackSchema, jobFileIds, openAiVideoFieldsSchema, jobStateSchema, toPublicJob, type Job, type JobData, type JobState, type SegmentState } from "./types.ts";
import { segmentPrompts } from "./video-request.ts";

export const JOB_ACTOR = "JobActor";
/**
 * The conversation a finished job calls back (videoFinished), typed from its
 * definition; a reference, not the definition, which is built from the
 * gateway's dependencies (and importing it would make an import cycle).
 */
const conversationActor = actorRef<ConversationActorDefinition>("ConversationActor");

export interface JobActorDeps extends StepDeps {
  /** The model and provider a job will start on; throws 400/503 when none can serve it. */
  plan(model: string | null, strategy: RoutingStrategy, withImage: boolean): { model: string; provider: string };
  directory: JobDirectory;
  events: JobEventBus;
  publisher?: EventPublisher;
  /** Period of the watchdog reminder (ms). */
  watchdogMs: number;
  /** First wait after a failed step on our side; doubles per failure (default 1 s). */
  retryBaseMs?: number;
  /** Budgets: under a hard limit a job holds its estimated cost (`estimate`, per part) or is refused 402 (actors/job/job-budget.ts). */
  budget?: JobBudget;
  estimate?(job: JobShape): number[];
  /** Counts status transitions (troupe_job_transitions_total) once their turn commits; a turn retried after a crash may count one twice. */
  metrics?: Pick<Metrics, "jobTransition">;
}

/** Failed steps on our side (file store, ffmpeg) in a row before the job fails. */
export const MAX_STEP_FAILURES = 5;
const stepRetryMs = (failures: number, baseMs: number) => Math.min(60_000, baseMs * 2 ** (failures - 1));

export const createJobInput = z.object({
  owner: ownerSchema,
  payer: payerSchema,
  prompt: z.string(),
  duration_seconds: z.number().int(),
  narration_text: z.string().nullable(),
  scenes: z.array(z.string()).nullable(),
  model: z.string().nullable(),
  routing_strategy: routingStrategySchema,
  image: z.object({ file_id: z.string(), content_type: z.string() }).nullable(),
  callback: jobCallbackSchema.nullable(),
  openai_video: openAiVideoFieldsSchema.nullable().default(null),
});
export type CreateJobInput = z.input<typeof createJobInput>;
/** The caller: its organization and, for an API key, its environment (a job of another environment is 404 to it). */
const orgInput = z.object({ organization_id: z.string(), environment_id: z.string().optional() });

type Ctx = ActorContext<JobState>;

/** When to poll a segment first: the previous segment's provider hint (usually the same provider), else 1 s. */
function firstPollMs(job: JobData, index: number): number {
  return job.segments[index - 1]?.task?.poll_after_ms ?? job.segments[index]?.task?.poll_after_ms ?? 1_000;
}

/** An arming older than this is not trusted (the actor may have moved away and back since): the submission looks first. */
const armingTrustMs = 60_000;

/** The armings this process made and whose submission has not run yet (see the header). */
class Armings {
  private readonly made = new Map<string, number>();
  private static key = (job: JobData, segment: SegmentState) => `${job.id}:${segment.index}:${segment.armed_at}`;

  /** Arms the next segment to submit, if any and not armed yet. */
  arm(job: JobData, now: number): void {
    const segment = segmentToSubmit(job);
    if (!segment || segment.armed_at !== null || isFinal(job.status)) return;
    segment.armed_at = now;
    this.made.set(Armings.key(job, segment), now);
    // Oldest first (insertion order): forget the ones too old to trust, whose turn ran elsewhere or never committed.
    for (const [key, at] of this.made) {
      if (now - at <= armingTrustMs) break;
      this.made.delete(key);
    }
  }

  /** Whether this process armed the segment recently; forgets it either way (a second run must look). */
  take(job: JobData, segment: SegmentState, now: number): boolean {
    const key = Armings.key(job, segment);
    const at = this.made.get(key);
    this.made.delete(key);
    return segment.armed_at !== null && at !== undefined && now - at <= armingTrustMs;
  }
}

/** The status inside a visibleOf() string (announceChange() compares it to see a transition). */
const statusOf = (visible: string): unknown => (JSON.parse(visible) as { status?: unknown }).status;

function ownedBy(job: JobData, caller: z.output<typeof orgInput>): boolean {
  return job.owner.organization_id === caller.organization_id && (caller.environment_id === undefined || job.owner.environment_id === caller.environment_id);
}

export function createJobActor(deps: JobActorDeps) {
  const publisher = deps.publisher ?? noEvents;
  const armings = new Armings();
  /** Jobs whose open parts are held by this process's ledger (holds made here, or restored after a restart). */
  const holding = new Set<string>();

  /**
   * When what callers see of the job changed in this turn: once the turn
   * commits (ctx.afterCommit, as the conversation announces its turns), the
   * transition is counted, the directory gets the new snapshot (not when the
   * job is `leaving` it: delete removes the entry), then live watchers hear
   * of it. A turn that fails announces none of it. At most once: a process
   * killed between the commit and the write leaves the snapshot behind until
   * the job's next change, and a final job's last step writes it again
   * (step), so none stays listed unfinished.
   */
  const announceChange = (ctx: Ctx, job: JobData, before: string, leaving = false): void => {
    if (visibleOf(job) === before) return;
    const transition = statusOf(before) !== job.status ? job.status : undefined;
    job.updated_at = isoTime(ctx.clock.now());
    const snapshot = toPublicJob(job);
    const { owner, openai_video: openaiVideo } = job;
    ctx.afterCommit(async () => {
      if (transition) deps.metrics?.jobTransition(transition);
      try {
        if (!leaving) await deps.directory.updated(owner, snapshot, openaiVideo);
      } finally {
        // After the snapshot: a socket opening reads the job from the directory, then hears the events after it.
        deps.events.publish({ type: "job.updated", job_id: snapshot.id, job: snapshot });
      }
    });
  };
  const visibleOf = (job: JobData): string => {
    const { updated_at: _u, ...visible } = toPublicJob(job);
    return JSON.stringify(visible);
  };

  const schedule = async (ctx: Ctx, job: JobData, afterMs: number): Promise<void> => {
    job.next_step_at = ctx.clock.now() + afterMs;
    await ctx.setReminder("next", Math.max(0, afterMs), undefined, "step", {});
  };

  /**
   * What a final job still owes: its webhook event, then the conversation's
   * callback. The callback is a hand-off (the conversation records the result
   * and answers it in a turn of its own), so this turn never waits for the
   * conversation's model; it is retried with the step until it succeeds.
   */
  const finish = async (ctx: Ctx, job: JobData): Promise<void> => {
    const snapshot = toPublicJob(job);
    if (!job.event_published) {
      const type = job.status === "completed" ? "job.completed" : "job.failed";
      await publisher.publish({ id: jobEventId(job.id, type), type, organization_id: job.owner.organization_id, project_id: job.owner.project_id, environment_id: job.owner.environment_id, created_at: job.updated_at, data: { job: snapshot } });
      job.event_published = true;
    }
    if (job.callback && !job.callback_done) {
      await ctx.call(conversationActor, job.callback.conversation_id, "videoFinished", {
        job_id: job.id,
        tool_call_id: job.callback.tool_call_id,
        result_url: job.result_url,
        error: job.error,
      });
      job.callback_done = true;
    }
    await releaseOpen(job);
    await ctx.clearReminder("watchdog");
  };

  /** A final job's parts not billed (cancelled, failed, or cheaper than held) go back to the budget. */
  const releaseOpen = async (job: JobData): Promise<void> => {
    const open = openParts(job.budget);
    if (job.budget && open.length > 0 && deps.budget) await deps.budget.releaseParts(job.budget, open.map((p) => p.id));
    for (const part of open) part.open = false;
    holding.delete(job.id);
  };

  /** Holds again, once per process, the open parts of a job admitted before a restart (idempotent where still held). */
  const restoreOpen = async (job: JobData): Promise<void> => {
    if (holding.has(job.id) || !deps.budget || !job.budget) return;
    const open = openParts(job.budget);
    if (open.length > 0) await deps.budget.restoreParts(job.budget, open);
    holding.add(job.id);
  };

  /** The create turn once the job is admitted: its state, directory entry and first reminders. */
  const createJob = async (ctx: Ctx, input: CreateJobInput, planned: { model: string; provider: string }, segments: string[], budget: JobData["budget"]): Promise<Job> => {
    const at = isoTime(ctx.clock.now());
    const job: JobData = {
      id: ctx.id,
      owner: input.owner,
      payer: input.payer,
      type: input.image ? "image_to_video" : "text_to_video",
      status: "queued",
      requested_model: input.model,
      routing_strategy: input.routing_strategy,
      model: planned.model,
      provider: planned.provider,
      prompt: input.prompt,
      duration_seconds: input.duration_seconds,
      narration_text: input.narration_text,
      image: input.image,
      segments: segments.map((prompt, index) => ({
        index,
        prompt,
        status: "pending",
        progress: 0,
        task: null,
        submissions: 0,
        file_id: null,
        billed: false,
        poll_failures: 0,
        armed_at: null,
        frame_file_id: null,
      })),
      narration_file_id: null,
      result_file_id: null,
      result_url: null,
      error: null,
      callback: input.callback,
      openai_video: input.openai_video ?? { seconds: String(input.duration_seconds * segments.length), size: null },
      budget,
      event_published: false,
      callback_done: false,
      next_step_at: 0,
      step_failures: 0,
      snapshot_dirty: false,
      created_at: at,
      updated_at: at,
    };
    armings.arm(job, ctx.clock.now());
    ctx.state.job = job;
    await ctx.setReminder("watchdog", deps.watchdogMs, deps.watchdogMs, "step", {});
    await schedule(ctx, job, 0);
    // Written inside the turn, as a conversation's creation is: the caller reads the job back from
    // the directory as soon as create answers. Last, so only the commit can fail after it.
    await deps.directory.created(input.owner, toPublicJob(job), job.openai_video);
    ctx.afterCommit(() => deps.metrics?.jobTransition("queued"));
    if (budget) holding.add(job.id);
    return toPublicJob(job);
  };

  /** Cancels the provider tasks in flight and fails the job with error.code cancelled (the caller announces it). */
  const cancelJob = async (ctx: Ctx, job: JobData): Promise<void> => {
    for (const segment of job.segments) {
      if (segment.status !== "processing" || !segment.task) continue;
      // Best effort: a provider that cannot cancel finishes the clip, which is then neither stored nor billed.
      await deps.video.cancelVideo(segment.task, { signal: AbortSignal.timeout(10_000) }).catch((error: unknown) => {
        ctx.log.warn("provider cancel failed", { job_id: job.id, segment: segment.index, error });
      });
      segment.status = "cancelled";
    }
    for (const segment of job.segments) if (segment.status === "pending") segment.status = "cancelled";
    failJob(job, "cancelled", "the job was cancelled");
  };

  return defineActor({
    type: JOB_ACTOR,
    state: jobStateSchema,
    initialState: (): JobState => ({ job: null }),
    methods: {
      create: {
        input: createJobInput,
        run: async (ctx, input): Promise<Job> => {
          if (ctx.state.job) throw new TroupeError("conflict", "job already exists");
          const planned = deps.plan(input.model, input.routing_strategy, input.image !== null);
          const segments = segmentPrompts(input);
          // Under a hard limit the whole job must fit before anything reaches a provider (402 otherwise).
          const amounts = deps.estimate?.({ ...input, withImage: input.image !== null, segments: segments.length }) ?? [];
          const held = deps.budget && amounts.length > 0 ? await deps.budget.reserveParts(input.payer, `job:${ctx.id}`, amounts, { keyBudget: true }) : undefined;
          try {
            return await createJob(ctx, input, planned, segments, held ? { ...held, parts: held.parts.map((p) => ({ ...p, open: true })) } : null);
          } catch (error) {
            // The turn is not committed: nothing holds these parts but the ledger.
            if (held) await deps.budget?.releaseParts(held, held.parts.map((p) => p.id)).catch(() => undefined);
            throw error;
          }
        },
      },

      get: {
        input: orgInput,
        run: async (ctx, input): Promise<Job> => {
          const job = ctx.state.job;
          if (!job || !ownedBy(job, input)) throw new TroupeError("not_found", "job not found");
          return toPublicJob(job);
        },
      },

      cancel: {
        input: orgInput,
        run: async (ctx, input): Promise<Job> => {
          const job = ctx.state.job;
          if (!job || !ownedBy(job, input)) throw new TroupeError("not_found", "job not found");
          if (isFinal(job.status)) throw new TroupeError("conflict", `the job is already ${job.status}`, { details: { status: job.status } });
          const before = visibleOf(job);
          await cancelJob(ctx, job);
          announceChange(ctx, job, before);
          await schedule(ctx, job, 0);
          return toPublicJob(job);
        },
      },

      // Cancels an unfinished job (its job.failed event and the conversation's
      // callback go out now: no step will run after this turn), then removes
      // every file it stored, its directory entry and its actor state (the
      // state left is the initial one, which the host deletes). Repeating it
      // after a failure part-way is safe: each removal is idempotent. The
      // entry is removed inside the turn, not after it: the caller must not
      // read a deleted job back, and its files are already gone.
      delete: {
        input: orgInput,
        run: async (ctx, input): Promise<{ id: string; deleted: true; files_deleted: number }> => {
          const job = ctx.state.job;
          if (!job || !ownedBy(job, input)) throw new TroupeError("not_found", "job not found");
          if (!isFinal(job.status)) {
            const before = visibleOf(job);
            await cancelJob(ctx, job);
            announceChange(ctx, job, before, true);
          }
          await finish(ctx, job);
          await ctx.clearReminder("next");
          let filesDeleted = 0;
          for (const fileId of jobFileIds(job)) if (await deps.media.files.delete(fileId)) filesDeleted += 1;
          await deps.directory.removed(job.owner, job.id);
          ctx.state = { job: null };
          // files_deleted: for the organization erasure's count; the routes answer { id, deleted } only.
          return { id: job.id, deleted: true, files_deleted: filesDeleted };
        },
      },

      step: {
        input: z.object({}),
        run: async (ctx): Promise<void> => {
          const job = ctx.state.job;
          if (!job) {
            await ctx.clearReminder("watchdog");
            return;
          }
          if (ctx.clock.now() < job.next_step_at) return;
          const before = visibleOf(job);
          // A watchdog run a long time from now until this step records its own next run.
          job.next_step_at = ctx.clock.now() + deps.watchdogMs;
          try {
            if (isFinal(job.status)) {
              await finish(ctx, job);
              job.step_failures = 0;
              // Again: the turn that made the job final wrote its snapshot at most once, after its commit.
              const { owner, openai_video: openaiVideo } = job;
              const snapshot = toPublicJob(job);
              ctx.afterCommit(() => deps.directory.updated(owner, snapshot, openaiVideo));
            } else {
              await restoreOpen(job);
              const submitting = segmentToSubmit(job);
              // A submission is the one call that must not be repeated: its
              // next step is scheduled before the provider call, so once the
              // task is accepted only the commit remains (no other write
              // widens the window in which a crash would submit it again;
              // what it announces leaves after the commit).
              if (submitting) await ctx.setReminder("next", firstPollMs(job, submitting.index), undefined, "step", {});
              const outcome = await advance(job, deps, !submitting || !armings.take(job, submitting, ctx.clock.now()));
              job.step_failures = 0;
              if (submitting?.status === "processing") {
                job.next_step_at = 0;
                announceChange(ctx, job, before);
                return;
              }
              armings.arm(job, ctx.clock.now());
              announceChange(ctx, job, before);
              await schedule(ctx, job, isFinal(job.status) ? 0 : outcome.afterMs);
            }
          } catch (error) {
            job.step_failures += 1;
            ctx.log.warn("job step failed", { job_id: job.id, failures: job.step_failures, error });
            if (!isFinal(job.status) && job.step_failures >= MAX_STEP_FAILURES) {
              failJob(job, isTroupeError(error) ? error.code : "internal_error", error instanceof Error ? error.message : "the job failed");
              announceChange(ctx, job, before);
              await schedule(ctx, job, 0);
            } else {
              await schedule(ctx, job, stepRetryMs(job.step_failures, deps.retryBaseMs ?? 1_000));
            }
          }
        },
      },
    },
  });
}

export type JobActorDefinition = ReturnType<typeof createJobActor>;
