// One stored Responses API response (docs/guides/responses.md): a
// ResponseActor per `resp_…` id holds that response alone — its own input
// items, its output (inside the public response object), its
// `previous_response_id`, its owner and its expiry. A continuation rebuilds
// its history by walking the links (gateway/compat/openai/responses/history.ts),
// so a new turn stores only its own items and forks share their common past
// without copying it (docs/decisions.md, "Responses API").
//
// A response is written once, when it ends (a streamed one too; a failed
// one is stored `failed`), and never changed after, except deleted: by its
// owner, by the retention reminder, or by the organization's erasure.
//
// A background response (`background: true`) is written when it is queued,
// with its run (background-run.ts): its status changes as the gateway's
// runner reports, and `get` (what a continuation reads, and caches) hides
// it until it ended. A periodic `watch` reminder keeps the run durable: it
// starts a queued run that no process runs (a restart), fails one whose
// process is gone (its heartbeat stale, or on the embedded host any run not
// of this process), and announces a final one's webhook once.
import { z } from "zod";
import { isoTime } from "../../core/clock.ts";
import { TroupeError } from "../../core/errors.ts";
import { noEvents, type EventPublisher } from "../../core/organization-events.ts";
import { defineActor, type ActorContext } from "../actor.ts";
import { openParts, type JobBudget } from "../job/job-budget.ts";
import { endRun, finishInputSchema, isFinalStatus, MAX_RUN_EVENTS, progressInputSchema, runStateSchema, terminalEventType, webhookResponseSchema, type RunEvent, type RunState } from "./background-run.ts";

export const RESPONSE_ACTOR = "ResponseActor";
const EXPIRE_REMINDER = "expire";

export const responseOwnerSchema = z.object({ organization_id: z.string(), project_id: z.string(), environment_id: z.string() });
export type ResponseOwner = z.infer<typeof responseOwnerSchema>;

/** An item as the Responses API shows it (message, function_call, function_call_output, reasoning…); the gateway's schemas check its shape. */
const itemSchema = z.record(z.string(), z.unknown());

export const storedResponseSchema = z.object({
  owner: responseOwnerSchema,
  /** Milliseconds since the epoch; past it the response is gone. */
  expires_at: z.number().int(),
  previous_response_id: z.string().nullable(),
  /** This response's own input items, item references resolved, each with its id. */
  input: z.array(itemSchema),
  /** The public response object (its `output` holds the output items). */
  response: z.record(z.string(), z.unknown()),
});
export type StoredResponse = z.infer<typeof storedResponseSchema>;

const stateSchema = z.object({ stored: storedResponseSchema.nullable(), run: runStateSchema.nullable().default(null) });
type State = z.infer<typeof stateSchema>;

/** Who asks: a key's organization and environment (another's response is not found). */
const readerSchema = z.object({ organization_id: z.string(), environment_id: z.string() });

/** What the actor needs to keep background runs going (absent: a host that runs none). */
export interface BackgroundRunDeps {
  /** Starts the run of a queued response in this process (a no-op when this process already runs it). */
  start(id: string): void;
  /** Whether this process runs it now. */
  runs(id: string): boolean;
  /** This process's runner name (each process start makes a new one). */
  runner: string;
  /** One process owns the data (embedded): a run of another runner name is dead, whatever its heartbeat. */
  singleProcess: boolean;
  publisher: EventPublisher;
  budget?: Pick<JobBudget, "releaseParts"> | undefined;
  /** Period of the watch reminder (ms). */
  watchMs: number;
  /** A heartbeat older than this is a dead runner (ms; the runner beats every second). */
  staleMs: number;
}

const WATCH_REMINDER = "watch";
const ANNOUNCE_REMINDER = "announce";

function visible(stored: StoredResponse | null, reader: z.infer<typeof readerSchema>, nowMs: number): StoredResponse | null {
  if (!stored || stored.expires_at <= nowMs) return null;
  return stored.owner.organization_id === reader.organization_id && stored.owner.environment_id === reader.environment_id ? stored : null;
}

/** The event log after `after` (a sequence number; -1: all). */
function eventsAfter(run: RunState, after: number): RunEvent[] {
  return run.events.slice(Math.max(0, after + 1));
}

/** Appends a runner's events that follow the log (a batch sent again after a failed call is not appended twice). */
function append(run: RunState, events: RunEvent[]): void {
  for (const e of events) if (e.sequence_number === run.events.length) run.events.push(e);
}

export function createResponseActor(background?: BackgroundRunDeps) {
  const publisher = background?.publisher ?? noEvents;
  type Ctx = ActorContext<State>;

  /** A final run's webhook (once: its id is the response's and the type's, so a repeat delivers nothing new) and its budget hold returned. */
  const announce = async (ctx: Ctx): Promise<void> => {
    const { stored, run } = ctx.state;
    if (!stored || !run || !isFinalStatus(run.status) || run.announced) return;
    const open = openParts(run.budget);
    if (run.budget && open.length > 0) await background?.budget?.releaseParts(run.budget, open.map((p) => p.id));
    for (const part of open) part.open = false;
    const type = terminalEventType(run.status);
    const { owner } = stored;
    await publisher.publish({ id: `${ctx.id}:${type}`, type, organization_id: owner.organization_id, project_id: owner.project_id, environment_id: owner.environment_id, created_at: isoTime(ctx.clock.now()), data: { response: webhookResponseSchema.parse(stored.response) } });
    run.announced = true;
    await ctx.clearReminder(WATCH_REMINDER);
  };

  /** After a turn that ended the run: the announcement in a turn of its own, once this one committed. */
  const ended = async (ctx: Ctx): Promise<void> => {
    await ctx.setReminder(ANNOUNCE_REMINDER, 0, undefined, "announce", {});
  };

  return defineActor({
    type: RESPONSE_ACTOR,
    state: stateSchema,
    initialState: (): State => ({ stored: null, run: null }),
    methods: {
      put: {
        input: z.object({ stored: storedResponseSchema }),
        run: async (ctx, input): Promise<{ id: string }> => {
          if (ctx.state.stored) {
            // A repeated delivery of the same write (Dapr may deliver twice) is answered as done; anything else is a clash of ids.
            if (JSON.stringify(ctx.state.stored) === JSON.stringify(input.stored)) return { id: ctx.id };
            throw new TroupeError("conflict", `response ${ctx.id} is already stored`);
          }
          ctx.state = { stored: input.stored, run: null };
          await ctx.setReminder(EXPIRE_REMINDER, Math.max(0, input.stored.expires_at - ctx.clock.now()), undefined, "expire", {});
          return { id: ctx.id };
        },
      },
      get: {
        input: readerSchema,
        // A background response still running is not readable as a stored one (a continuation cannot build on it yet).
        run: async (ctx, input): Promise<StoredResponse | null> => (ctx.state.run && !isFinalStatus(ctx.state.run.status) ? null : visible(ctx.state.stored, input, ctx.clock.now())),
      },
      /** Queues a background response: its object (status queued) and its run; the runner claims it. */
      enqueue: {
        input: z.object({ stored: storedResponseSchema, run: runStateSchema }),
        run: async (ctx, input): Promise<{ id: string }> => {
          if (ctx.state.stored || ctx.state.run) {
            if (JSON.stringify(ctx.state.run?.body) === JSON.stringify(input.run.body)) return { id: ctx.id };
            throw new TroupeError("conflict", `response ${ctx.id} is already stored`);
          }
          if (!background) throw new TroupeError("internal_error", "this host runs no background responses");
          ctx.state = { stored: input.stored, run: input.run };
          await ctx.setReminder(EXPIRE_REMINDER, Math.max(0, input.stored.expires_at - ctx.clock.now()), undefined, "expire", {});
          await ctx.setReminder(WATCH_REMINDER, background.watchMs, background.watchMs, "watch", {});
          return { id: ctx.id };
        },
      },
      /** The runner takes a queued run (one runner wins); null when there is nothing to run. */
      claim: {
        input: z.object({ runner: z.string() }),
        run: async (ctx, input): Promise<{ stored: StoredResponse; run: RunState } | null> => {
          const { stored, run } = ctx.state;
          if (!stored || !run || run.status !== "queued") return null;
          run.status = "in_progress";
          run.runner = input.runner;
          run.heartbeat_at = ctx.clock.now();
          stored.response = { ...stored.response, status: "in_progress" };
          return { stored, run };
        },
      },
      /** The runner's events since its last report (also its heartbeat); `stop`: the run was cancelled or deleted, or its log is full. */
      progress: {
        input: progressInputSchema,
        run: async (ctx, input): Promise<{ stop: boolean }> => {
          const { stored, run } = ctx.state;
          if (!stored || !run || run.runner !== input.runner || isFinalStatus(run.status)) return { stop: true };
          append(run, input.events);
          if (input.response) stored.response = input.response;
          run.heartbeat_at = ctx.clock.now();
          return { stop: run.events.length >= MAX_RUN_EVENTS };
        },
      },
      /** The runner's end of the run: the final object and last events; refused (false) when the run ended otherwise meanwhile. */
      finish: {
        input: finishInputSchema,
        run: async (ctx, input): Promise<{ accepted: boolean }> => {
          const { stored, run } = ctx.state;
          if (!stored || !run || run.runner !== input.runner || isFinalStatus(run.status)) return { accepted: false };
          append(run, input.events);
          stored.response = input.response;
          const status = runStateSchema.shape.status.safeParse(input.response.status);
          run.status = status.success && isFinalStatus(status.data) ? status.data : "failed";
          run.runner = null;
          if (input.billed) for (const part of run.budget?.parts ?? []) part.open = false;
          await ended(ctx);
          return { accepted: true };
        },
      },
      /** POST …/cancel: a queued or running one ends cancelled; a final one is answered as it is; a response not run in the background is a 400. */
      cancel: {
        input: readerSchema,
        run: async (ctx, input): Promise<Record<string, unknown>> => {
          const stored = visible(ctx.state.stored, input, ctx.clock.now());
          const { run } = ctx.state;
          if (!stored) throw new TroupeError("not_found", `No response with id '${ctx.id}' found.`);
          if (!run) throw new TroupeError("invalid_request", "Only responses created with background set to true can be cancelled.", { details: [{ path: "background", message: "this response was not created with background: true" }] });
          if (isFinalStatus(run.status)) return stored.response;
          stored.response = endRun(run, stored.response, "cancelled", null);
          await ended(ctx);
          return stored.response;
        },
      },
      /** The response as it is now, running or not (retrieve), and whether it runs in the background. */
      current: {
        input: readerSchema,
        run: async (ctx, input): Promise<{ response: Record<string, unknown>; background: boolean } | null> => {
          const stored = visible(ctx.state.stored, input, ctx.clock.now());
          return stored ? { response: stored.response, background: ctx.state.run !== null } : null;
        },
      },
      /** A background response's events after `after` (a resumed stream); `final`: the log holds its terminal event. */
      events: {
        input: readerSchema.extend({ after: z.number().int().min(-1) }),
        run: async (ctx, input): Promise<{ events: RunEvent[]; final: boolean } | null> => {
          const stored = visible(ctx.state.stored, input, ctx.clock.now());
          const { run } = ctx.state;
          if (!stored || !run) return null;
          return { events: eventsAfter(run, input.after), final: isFinalStatus(run.status) };
        },
      },
      /** The run's watchdog (see the header). */
      watch: {
        input: z.object({}),
        run: async (ctx): Promise<void> => {
          const { stored, run } = ctx.state;
          if (!stored || !run || !background) return ctx.clearReminder(WATCH_REMINDER);
          if (isFinalStatus(run.status)) return announce(ctx);
          if (run.status === "queued") {
            const id = ctx.id;
            ctx.afterCommit(() => background.start(id));
            return;
          }
          if (run.runner === background.runner && background.runs(ctx.id)) return;
          const gone = background.singleProcess || run.runner === background.runner || ctx.clock.now() - run.heartbeat_at > background.staleMs;
          if (!gone) return;
          // Not run again: the provider may have answered (and been billed) before the process stopped.
          stored.response = endRun(run, stored.response, "failed", { code: "server_error", message: "The Troupe process running this background response stopped before it finished; it was not retried. Create it again." });
          await announce(ctx);
        },
      },
      announce: {
        input: z.object({}),
        run: async (ctx): Promise<void> => announce(ctx),
      },
      delete: {
        input: readerSchema,
        run: async (ctx, input): Promise<{ deleted: boolean }> => {
          if (!visible(ctx.state.stored, input, ctx.clock.now())) return { deleted: false };
          await ctx.clearReminder(EXPIRE_REMINDER);
          await ctx.clearReminder(WATCH_REMINDER);
          ctx.state = { stored: null, run: null };
          return { deleted: true };
        },
      },
      /** The organization's erasure: whatever the environment. */
      erase: {
        input: z.object({ organization_id: z.string() }),
        run: async (ctx, input): Promise<{ erased: boolean }> => {
          if (ctx.state.stored && ctx.state.stored.owner.organization_id !== input.organization_id) return { erased: false };
          await ctx.clearReminder(EXPIRE_REMINDER);
          await ctx.clearReminder(WATCH_REMINDER);
          ctx.state = { stored: null, run: null };
          return { erased: true };
        },
      },
      /** Retention: the reminder set by put. */
      expire: {
        input: z.object({}),
        run: async (ctx): Promise<{ expired: boolean }> => {
          if (!ctx.state.stored) return { expired: false };
          if (ctx.state.stored.expires_at > ctx.clock.now()) {
            await ctx.setReminder(EXPIRE_REMINDER, ctx.state.stored.expires_at - ctx.clock.now(), undefined, "expire", {});
            return { expired: false };
          }
          await ctx.clearReminder(WATCH_REMINDER);
          ctx.state = { stored: null, run: null };
          return { expired: true };
        },
      },
    },
  });
}

export type ResponseActorDefinition = ReturnType<typeof createResponseActor>;
