// Actors the conformance suite drives, the same definitions on every host.
// Module-level maps observe things state cannot (turns overlapping, which
// process ran a turn); they are per process, which is what the cases need.
import { z } from "zod";
import { TroupeError } from "../../core/errors.ts";
import { actorRef, defineActor } from "../../actors/actor.ts";

const inFlight = new Map<string, number>();

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Other counters, called typed from this very definition (a reference: the definition is still being declared). */
const counter = actorRef<typeof CounterActor>("TestCounter");

export const CounterActor = defineActor({
  type: "TestCounter",
  state: z.object({
    count: z.number().int(),
    log: z.array(z.number()),
    marks: z.array(z.string()),
    /** Highest number of turns seen running at once on this actor. */
    maxConcurrent: z.number().int(),
  }),
  initialState: () => ({ count: 0, log: [], marks: [], maxConcurrent: 0 }),
  methods: {
    get: { input: z.undefined(), run: async (ctx) => ({ ...ctx.state, replica: process.env.TROUPE_REPLICA ?? "0", pid: process.pid }) },
    increment: {
      input: z.object({ by: z.number().int().optional() }).optional(),
      run: async (ctx, input) => {
        ctx.state.count += input?.by ?? 1;
        return ctx.state.count;
      },
    },
    /** Appends `n` after yielding to the event loop, to expose overlapping turns. */
    append: {
      input: z.number().int(),
      run: async (ctx, n) => {
        const key = `${ctx.type}/${ctx.id}`;
        const running = (inFlight.get(key) ?? 0) + 1;
        inFlight.set(key, running);
        try {
          ctx.state.maxConcurrent = Math.max(ctx.state.maxConcurrent, running);
          await new Promise((resolve) => setImmediate(resolve));
          ctx.state.log.push(n);
          ctx.state.count += 1;
          return ctx.state.log.length;
        } finally {
          inFlight.set(key, running - 1);
        }
      },
    },
    sleep: {
      input: z.number().nonnegative(),
      run: async (_ctx, ms) => {
        await sleep(ms);
        return ms;
      },
    },
    /** Changes state, then fails: nothing may stick. */
    failAfterWrite: {
      input: z.string(),
      run: async (ctx, message) => {
        ctx.state.count = 999_999;
        ctx.state.marks.push("must-not-persist");
        throw new TroupeError("conflict", message, { details: { reason: "test" } });
      },
    },
    /** Leaves a count the state schema refuses (not an integer): the commit must fail the turn. */
    breakState: {
      input: z.undefined(),
      run: async (ctx) => {
        ctx.state.count = 0.5;
        ctx.state.marks.push("must-not-persist");
        return true;
      },
    },
    failPlain: {
      input: z.undefined(),
      run: async (ctx) => {
        ctx.state.count = -1;
        throw new Error("plain failure");
      },
    },
    mark: {
      input: z.string().min(1),
      run: async (ctx, label) => {
        ctx.state.marks.push(label);
        return ctx.state.marks.length;
      },
    },
    /** Arms a reminder and a timer that both call `mark` after `dueMs`. */
    armBoth: {
      input: z.number().nonnegative(),
      run: async (ctx, dueMs) => {
        await ctx.setReminder("r1", dueMs, undefined, "mark", "reminder");
        await ctx.setTimer("t1", dueMs, undefined, "mark", "timer");
        return true;
      },
    },
    armTimer: {
      input: z.object({ dueMs: z.number().nonnegative(), periodMs: z.number().positive().optional() }),
      run: async (ctx, input) => {
        await ctx.setTimer("tick", input.dueMs, input.periodMs, "mark", "tick");
        return true;
      },
    },
    clearTick: {
      input: z.undefined(),
      run: async (ctx) => {
        await ctx.clearTimer("tick");
        return true;
      },
    },
    armReminder: {
      input: z.object({ name: z.string(), dueMs: z.number().nonnegative(), periodMs: z.number().positive().optional() }),
      run: async (ctx, input) => {
        await ctx.setReminder(input.name, input.dueMs, input.periodMs, "mark", input.name);
        return true;
      },
    },
    clearReminder: {
      input: z.string(),
      run: async (ctx, name) => {
        await ctx.clearReminder(name);
        return true;
      },
    },
    /** Actor-to-actor: increments another counter and records its answer. */
    relay: {
      input: z.object({ targetId: z.string(), by: z.number().int() }),
      run: async (ctx, input): Promise<number> => {
        const result: number = await ctx.call(counter, input.targetId, "increment", { by: input.by });
        ctx.state.marks.push(`relayed:${String(result)}`);
        return result;
      },
    },
    /**
     * Counts, and announces the count to another counter after the commit
     * (ctx.afterCommit); `fail` makes the turn throw after queueing it.
     */
    announce: {
      input: z.object({ targetId: z.string(), fail: z.boolean() }),
      run: async (ctx, input): Promise<number> => {
        ctx.state.count += 1;
        const count = ctx.state.count;
        ctx.afterCommit(() => ctx.call(counter, input.targetId, "mark", `announced:${count}`));
        if (input.fail) throw new TroupeError("conflict", "failed after queueing an announcement");
        return count;
      },
    },
    /** Arms a periodic reminder and clears it once the turn committed (the pattern of a job done in this turn). */
    armThenClearAfterCommit: {
      input: z.undefined(),
      run: async (ctx) => {
        ctx.state.count += 1;
        await ctx.setReminder("cleared", 500, 500, "mark", "cleared");
        ctx.afterCommit(() => ctx.clearReminder("cleared"));
        return true;
      },
    },
    /** Blocks this process's event loop (an app that stops answering health probes). */
    busy: {
      input: z.number().nonnegative(),
      run: async (_ctx, ms) => {
        const end = Date.now() + ms;
        while (Date.now() < end) {
          // spin
        }
        return ms;
      },
    },
    /** Trivial method for the benchmark: no state change, so no write. */
    ping: { input: z.undefined(), run: async (ctx) => ctx.state.count },
  },
});

export const testActors = [CounterActor];
