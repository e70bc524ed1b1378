// ctx.afterCommit on the turn machinery both hosts share
// (actors/hosts/activation.ts), with a state write the test controls: what a
// turn queues runs only after its state write succeeded, in order, before the
// caller gets its answer; a turn that throws, or whose write fails, runs
// none of it; a failing announcement does not fail the committed turn. The
// conformance suite checks the same on each host over HTTP.
import t from "tap";
import { z } from "zod";
import { defineActor, eraseDefinition } from "../../../actors/actor.ts";
import { Activation } from "../../../actors/hosts/activation.ts";
import { offlineActorServices } from "../../support/offline-actor-services.ts";

const trail: string[] = [];

const Announcer = defineActor({
  type: "Announcer",
  state: z.object({ n: z.number().int() }),
  initialState: () => ({ n: 0 }),
  methods: {
    bump: {
      input: z.object({ fail: z.boolean(), throwing: z.boolean().default(false) }),
      run: async (ctx, input) => {
        ctx.state.n += 1;
        const n = ctx.state.n;
        ctx.afterCommit(() => trail.push(`first:${n}`));
        if (input.throwing) ctx.afterCommit(() => Promise.reject(new Error("announcement failed")));
        ctx.afterCommit(() => trail.push(`second:${n}`));
        trail.push(`ran:${n}`);
        if (input.fail) throw new Error("turn failed");
        return n;
      },
    },
    /** Leaves a promise running that queues an announcement after the turn ended. */
    late: {
      input: z.undefined(),
      run: async (ctx) => {
        ctx.state.n += 1;
        setTimeout(() => {
          try {
            ctx.afterCommit(() => trail.push("late"));
          } catch (error) {
            trail.push(`refused: ${(error as Error).message}`);
          }
        }, 10);
        return ctx.state.n;
      },
    },
  },
});

const services = offlineActorServices();

t.test("announcements run after the state write, in order, and never for a failed turn or a failed write", async (t) => {
  let refuseWrites = false;
  const activation = new Activation(eraseDefinition(Announcer), "a1", JSON.stringify({ n: 0 }), services, async (json) => {
    await new Promise((resolve) => setTimeout(resolve, 5)); // a write that takes a while
    if (refuseWrites) throw new Error("store unavailable");
    trail.push(`persisted:${(JSON.parse(json ?? "{}") as { n: number }).n}`);
  });

  t.equal(await activation.invoke("bump", { fail: false }), 1);
  t.same(trail.splice(0), ["ran:1", "persisted:1", "first:1", "second:1"], "after the write, in order, before the answer");

  await t.rejects(activation.invoke("bump", { fail: true }), /turn failed/);
  t.same(trail.splice(0), ["ran:2"], "a failed turn announces nothing");

  refuseWrites = true;
  await t.rejects(activation.invoke("bump", { fail: false }), /store unavailable/);
  refuseWrites = false;
  t.same(trail.splice(0), ["ran:2"], "a turn whose state write fails announces nothing");

  t.equal(await activation.invoke("bump", { fail: false, throwing: true }), 2, "a rejected announcement does not fail the committed turn");
  t.same(trail.splice(0), ["ran:2", "persisted:2", "first:2", "second:2"], "nor stop the ones after it");

  t.equal(await activation.invoke("late", undefined), 3);
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.same(trail.splice(0), ["persisted:3", "refused: Announcer.late: afterCommit called after the turn ended"], "an announcement queued after the turn is refused");
});
