// Actors the conformance suite drives, the same definitions on every host.
// Module-level maps observe things state cannot (turns overlapping, which
// process ran a turn); they are per process, which is what the cases need.
import { z } from "zod";
import { TroupeError } from "../../core/errors.ts";
import { defineActor } from "../../actors/actor.ts";

const inFlight = new Map<string, number>();

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

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
    get: async (ctx) => ({ ...ctx.state, replica: process.env.TROUPE_REPLICA ?? "0", pid: process.pid }),
    increment: async (ctx, input: { by?: number } | undefined) => {
      ctx.state.count += input?.by ?? 1;
      return ctx.state.count;
    },
    /** Appends `n` after yielding to the event loop, to expose overlapping turns. */
    append: async (ctx, n: number) => {
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
    sleep: async (_ctx, ms: number) => {
      await sleep(ms);
      return ms;
    },
    /** Changes state, then fails: nothing may stick. */
    failAfterWrite: async (ctx, message: string) => {
      ctx.state.count = 999_999;
      ctx.state.marks.push("must-not-persist");
      throw new TroupeError("conflict", message, { details: { reason: "test" } });
    },
    failPlain: async (ctx) => {
      ctx.state.count = -1;
      throw new Error("plain failure");
    },
    mark: async (ctx, label: string) => {
      ctx.state.marks.push(label);
      return ctx.state.marks.length;
    },
    /** Arms a reminder and a timer that both call `mark` after `dueMs`. */
    armBoth: async (ctx, dueMs: number) => {
      await ctx.setReminder("r1", dueMs, undefined, "mark", "reminder");
      await ctx.setTimer("t1", dueMs, undefined, "mark", "timer");
      return true;
    },
    armTimer: async (ctx, input: { dueMs: number; periodMs?: number }) => {
      await ctx.setTimer("tick", input.dueMs, input.periodMs, "mark", "tick");
      return true;
    },
    clearTick: async (ctx) => {
      await ctx.clearTimer("tick");
      return true;
    },
    armReminder: async (ctx, input: { name: string; dueMs: number; periodMs?: number }) => {
      await ctx.setReminder(input.name, input.dueMs, input.periodMs, "mark", input.name);
      return true;
    },
    clearReminder: async (ctx, name: string) => {
      await ctx.clearReminder(name);
      return true;
    },
    /** Actor-to-actor: increments another counter and records its answer. */
    relay: async (ctx, input: { targetId: string; by: number }) => {
      const result = await ctx.call("TestCounter", input.targetId, "increment", { by: input.by });
      ctx.state.marks.push(`relayed:${String(result)}`);
      return result;
    },
    /** Blocks this process's event loop (an app that stops answering health probes). */
    busy: async (_ctx, ms: number) => {
      const end = Date.now() + ms;
      while (Date.now() < end) {
        // spin
      }
      return ms;
    },
    /** Trivial method for the benchmark: no state change, so no write. */
    ping: async (ctx) => ctx.state.count,
  },
});

export const testActors = [CounterActor];
