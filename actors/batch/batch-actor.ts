// BatchActor: one per batch (OpenAI's Batch API and Anthropic's Message
// Batches share it; docs/api/batches.md). Thin by design: the head of the
// batch (status, counts, the cursor, the leased lines, a bitmap of the
// answered ones) and its transitions. The lines run outside the turn, in the
// process's BatchRunner (batch-runner.ts), which leases a few lines at a time
// and reports each answer; so a cancel or a retrieve never waits behind a
// model call. A periodic durable reminder (`watchdog`) kicks the runner
// again after a restart, a pause or a lost process: leases held by another
// runner epoch (a killed process) go to the next lease, so the batch resumes
// at its first unanswered lines and a line answered twice is counted once.
import { z } from "zod";
import { isoTime } from "../../core/clock.ts";
import { TroupeError } from "../../core/errors.ts";
import { noEvents, type EventPublisher } from "../../core/organization-events.ts";
import { apiKeyRecordSchema } from "../../tenancy/types.ts";
import { defineActor, type ActorContext } from "../actor.ts";
import { batchEndpointSchema, batchErrorSchema, batchStateSchema, finalStatuses, isAnswered, markAnswered, toOpenAiBatch, type BatchData, type BatchState } from "./types.ts";

export const BATCH_ACTOR = "BatchActor";

export interface BatchActorDeps {
  /** Starts (or keeps) this process's runner on the batch; called after the turn commits. */
  kick(batchId: string): void;
  /** Live progress (the job events socket's bus): after each committed change. */
  progress?(batch: BatchData): void;
  publisher?: EventPublisher;
  /** Period of the watchdog reminder (ms). */
  watchdogMs: number;
}

export const createBatchInput = z.object({
  api: z.enum(["openai", "anthropic"]),
  key: apiKeyRecordSchema,
  endpoint: batchEndpointSchema,
  input_file_id: z.string(),
  completion_window: z.string(),
  metadata: z.record(z.string(), z.string()).nullable(),
  total: z.number().int().min(0),
  /** Validation errors found at creation (a line for another endpoint): the batch is created failed, nothing runs. */
  errors: z.array(batchErrorSchema).nullable(),
  /** How long the batch may run (ms): completion_window. */
  window_ms: z.number().int().min(1),
});
export type CreateBatchInput = z.input<typeof createBatchInput>;

/** The caller: a batch of another organization or environment is 404 to it. */
const callerInput = z.object({ organization_id: z.string(), environment_id: z.string() });
const leaseInput = z.object({ epoch: z.string(), max: z.number().int().min(1).max(1000) });
const answeredInput = z.object({ epoch: z.string(), index: z.number().int().min(0), ok: z.boolean() });
const answeredManyInput = z.object({ epoch: z.string(), answers: z.array(z.object({ index: z.number().int().min(0), ok: z.boolean() })).min(1).max(1000) });
const releaseInput = z.object({ index: z.number().int().min(0), pause: z.enum(["budget_exceeded"]).nullable() });
const finalizedInput = z.object({ output_file_id: z.string().nullable(), error_file_id: z.string().nullable() });

type Ctx = ActorContext<BatchState>;
const seconds = (ms: number) => Math.floor(ms / 1000);

/** Whether the batch's lines are all settled and its files still to write (the runner writes them, then calls finalized). */
export function needsFiles(b: BatchData): boolean {
  if (b.status === "finalizing" || b.status === "expired") return b.output_file_id === null && b.error_file_id === null && !b.event_published;
  return b.status === "cancelling" && b.leased.length === 0;
}

function ownedBy(b: BatchData, caller: z.output<typeof callerInput>): boolean {
  return b.key.organization_id === caller.organization_id && b.key.environment_id === caller.environment_id;
}

function notFound(id: string): TroupeError {
  return new TroupeError("not_found", `no batch ${id}`);
}

export function createBatchActor(deps: BatchActorDeps) {
  const publisher = deps.publisher ?? noEvents;

  /** After the turn commits: live progress, and the runner goes on when there is something to run or write. */
  const announce = (ctx: Ctx, b: BatchData, kick: boolean): void => {
    const snapshot = structuredClone(b);
    ctx.afterCommit(() => {
      deps.progress?.(snapshot);
      if (kick) deps.kick(snapshot.id);
    });
  };

  /** The final event, once (its id is deterministic, so a retry after a crash is delivered once). */
  const publishFinal = async (ctx: Ctx, b: BatchData): Promise<void> => {
    if (b.event_published || !finalStatuses.has(b.status)) return;
    const type = b.status === "completed" ? "batch.completed" : b.status === "failed" ? "batch.failed" : b.status === "cancelled" ? "batch.cancelled" : "batch.expired";
    await publisher.publish({ id: `evt_${b.id}_${b.status}`, type, organization_id: b.key.organization_id, project_id: b.key.project_id, environment_id: b.key.environment_id, created_at: isoTime(ctx.clock.now()), data: { batch: toOpenAiBatch(b) } });
    b.event_published = true;
    await ctx.clearReminder("watchdog");
  };

  /** Past its completion window: nothing new starts; what was answered is kept and written out. */
  const expireIfDue = (ctx: Ctx, b: BatchData): void => {
    if (finalStatuses.has(b.status) || b.status === "cancelling" || ctx.clock.now() < b.expires_at * 1000) return;
    b.status = "expired";
    b.expired_at = seconds(ctx.clock.now());
    b.leased = [];
  };

  const batchOf = (ctx: Ctx): BatchData => {
    if (!ctx.state.batch) throw notFound(ctx.id);
    return ctx.state.batch;
  };

  /** Counts each stored answer once, frees its lease, and finalizes the batch when the last line is answered. */
  const countAnswers = (ctx: Ctx, answers: ReadonlyArray<{ index: number; ok: boolean }>): { status: BatchData["status"] } => {
    const b = batchOf(ctx);
    const done = new Set(answers.map((a) => a.index));
    b.leased = b.leased.filter((l) => !done.has(l.index));
    for (const { index, ok } of answers) {
      if (index >= b.total || isAnswered(b.answered, index)) continue;
      b.answered = markAnswered(b.answered, b.total, index);
      if (ok) b.completed += 1;
      else b.failed += 1;
    }
    if (b.status === "in_progress" && b.completed + b.failed === b.total) {
      b.status = "finalizing";
      b.finalizing_at = seconds(ctx.clock.now());
    }
    announce(ctx, b, false);
    return { status: b.status };
  };

  return defineActor({
    type: BATCH_ACTOR,
    state: batchStateSchema,
    initialState: (): BatchState => ({ batch: null }),
    methods: {
      create: {
        input: createBatchInput,
        run: async (ctx, input) => {
          if (ctx.state.batch) return toOpenAiBatch(ctx.state.batch);
          const nowMs = ctx.clock.now();
          const failed = input.errors !== null && input.errors.length > 0;
          const b: BatchData = {
            id: ctx.id,
            api: input.api,
            key: input.key,
            endpoint: input.endpoint,
            input_file_id: input.input_file_id,
            completion_window: input.completion_window,
            metadata: input.metadata,
            status: failed ? "failed" : input.total === 0 ? "finalizing" : "in_progress",
            paused: null,
            total: input.total,
            cursor: 0,
            leased: [],
            answered: Buffer.alloc(Math.ceil(input.total / 8)).toString("base64"),
            completed: 0,
            failed: 0,
            skipped: 0,
            errors: failed ? input.errors : null,
            output_file_id: null,
            error_file_id: null,
            created_at: seconds(nowMs),
            in_progress_at: failed ? null : seconds(nowMs),
            expires_at: seconds(nowMs + input.window_ms),
            finalizing_at: input.total === 0 && !failed ? seconds(nowMs) : null,
            completed_at: null,
            failed_at: failed ? seconds(nowMs) : null,
            expired_at: null,
            cancelling_at: null,
            cancelled_at: null,
            event_published: false,
          };
          ctx.state.batch = b;
          await ctx.setReminder("watchdog", deps.watchdogMs, deps.watchdogMs, "watchdog", {});
          if (failed) await publishFinal(ctx, b);
          announce(ctx, b, !failed);
          return toOpenAiBatch(b);
        },
      },
      get: {
        input: callerInput,
        run: async (ctx, caller) => {
          const b = ctx.state.batch;
          if (!b || !ownedBy(b, caller)) throw notFound(ctx.id);
          return structuredClone(b);
        },
      },
      /** Up to `max` lines for runner `epoch`: first those another epoch held (a killed process's), then new ones from the cursor. */
      lease: {
        input: leaseInput,
        run: async (ctx, input) => {
          const b = ctx.state.batch;
          if (!b) return { batch: null, indices: [] };
          expireIfDue(ctx, b);
          const indices: number[] = [];
          if (b.status === "in_progress" && b.paused === null) {
            for (const lease of b.leased) {
              if (indices.length >= input.max) break;
              if (lease.epoch !== input.epoch) {
                lease.epoch = input.epoch;
                indices.push(lease.index);
              }
            }
            while (indices.length < input.max && b.cursor < b.total) {
              if (!isAnswered(b.answered, b.cursor)) {
                b.leased.push({ index: b.cursor, epoch: input.epoch });
                indices.push(b.cursor);
              }
              b.cursor += 1;
            }
          }
          return { batch: structuredClone(b), indices };
        },
      },
      /** A line's answer is stored: count it (once), free its lease, and finalize when it was the last. */
      answered: {
        input: answeredInput,
        run: async (ctx, input) => countAnswers(ctx, [input]),
      },
      /** The same for several stored answers in one turn: the runner reports lines that finished together at once, one state write for all. */
      answeredMany: {
        input: answeredManyInput,
        run: async (ctx, input) => countAnswers(ctx, input.answers),
      },
      /** A line that could not start: back to the next lease; with `pause`, the batch stops starting lines until the watchdog tries again. */
      release: {
        input: releaseInput,
        run: async (ctx, input) => {
          const b = batchOf(ctx);
          // Cancelling: the line never runs again, so its lease goes (a lease left unheld would keep the batch from ending).
          if (b.status === "cancelling") b.leased = b.leased.filter((l) => l.index !== input.index);
          else for (const lease of b.leased) if (lease.index === input.index) lease.epoch = "";
          if (input.pause && b.status === "in_progress") b.paused = input.pause;
          announce(ctx, b, false);
          return { status: b.status, paused: b.paused };
        },
      },
      cancel: {
        input: callerInput,
        run: async (ctx, caller) => {
          const b = ctx.state.batch;
          if (!b || !ownedBy(b, caller)) throw notFound(ctx.id);
          if (b.status === "in_progress" || b.status === "validating") {
            b.status = "cancelling";
            b.cancelling_at = seconds(ctx.clock.now());
            // Lines no runner holds any more (a killed process's) never start.
            b.leased = b.leased.filter((l) => l.epoch !== "");
            announce(ctx, b, true);
          }
          return toOpenAiBatch(b);
        },
      },
      /** A line that was leased but will never run (cancelling): its lease goes. */
      dropped: {
        input: z.object({ index: z.number().int().min(0) }),
        run: async (ctx, input) => {
          const b = batchOf(ctx);
          b.leased = b.leased.filter((l) => l.index !== input.index);
          return { status: b.status };
        },
      },
      /** The runner wrote the output and error files: the batch ends and its event goes out. */
      finalized: {
        input: finalizedInput,
        run: async (ctx, input) => {
          const b = batchOf(ctx);
          if (!needsFiles(b)) return toOpenAiBatch(b);
          const nowS = seconds(ctx.clock.now());
          b.output_file_id = input.output_file_id;
          b.error_file_id = input.error_file_id;
          b.skipped = b.total - b.completed - b.failed;
          if (b.status === "finalizing") {
            b.status = "completed";
            b.completed_at = nowS;
          } else if (b.status === "cancelling") {
            b.status = "cancelled";
            b.cancelled_at = nowS;
          }
          await publishFinal(ctx, b);
          announce(ctx, b, false);
          return toOpenAiBatch(b);
        },
      },
      /** Periodic and durable: resumes a paused batch, re-kicks the runner after a restart, retries the final event. */
      watchdog: {
        input: z.object({}),
        run: async (ctx) => {
          const b = ctx.state.batch;
          if (!b) {
            await ctx.clearReminder("watchdog");
            return;
          }
          expireIfDue(ctx, b);
          b.paused = null;
          if (finalStatuses.has(b.status) && !needsFiles(b)) await publishFinal(ctx, b);
          else announce(ctx, b, true);
        },
      },
      /** Organization deletion: the batch is gone (its files and answers are deleted by the caller). */
      erase: {
        input: z.object({}),
        run: async (ctx) => {
          const total = ctx.state.batch?.total ?? 0;
          const environmentId = ctx.state.batch?.key.environment_id ?? null;
          ctx.state.batch = null;
          await ctx.clearReminder("watchdog");
          return { total, environment_id: environmentId };
        },
      },
    },
  });
}

export type BatchActorDefinition = ReturnType<typeof createBatchActor>;
