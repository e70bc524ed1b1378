// The actor conformance suite: one set of cases every actor host must pass
// (embedded.test.ts, dapr.test.ts, dapr-two-replicas.test.ts run it). It pins
// down Orleans/Dapr virtual-actor semantics: turn-based concurrency per
// actor, parallelism across actors, activation and idle deactivation, state
// committed only by successful turns and surviving deactivation and kill -9,
// durable reminders vs in-memory timers, actor-to-actor calls, announcements
// that leave only after a turn commits (ctx.afterCommit), and (with
// two replicas) failover of a dead replica's actors with their state.
import { randomBytes } from "node:crypto";
import type { Test } from "tap";
import { z } from "zod";
import type { CallResult, ConformanceTarget } from "./conformance-target.ts";

export interface ConformanceCase {
  name: string;
  /** Only for targets with at least this many replicas. */
  minReplicas?: number;
  run(t: Test, target: ConformanceTarget): Promise<void>;
}

const counterView = z.object({
  count: z.number(),
  log: z.array(z.number()),
  marks: z.array(z.string()),
  maxConcurrent: z.number(),
  replica: z.string(),
  pid: z.number(),
});
type CounterView = z.infer<typeof counterView>;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const freshId = (label: string) => `${label}-${randomBytes(4).toString("hex")}`;

function ok(t: Test, result: CallResult, what: string): unknown {
  t.equal(result.status, 200, `${what}: HTTP 200${result.error ? ` (got ${result.error.name}: ${result.error.message})` : ""}`);
  return result.output;
}

async function view(t: Test, target: ConformanceTarget, id: string, replica = 0): Promise<CounterView> {
  const result = await target.call(id, "get", undefined, replica);
  if (result.status !== 200) t.fail(`get ${id}: HTTP ${result.status} ${result.error?.message ?? ""}`);
  return counterView.parse(result.output);
}

/** Polls until check() is true or timeoutMs passes; returns whether it became true. */
async function eventually(check: () => Promise<boolean>, timeoutMs: number, stepMs = 100): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return true;
    } catch {
      // The target may be restarting; keep polling until the deadline.
    }
    if (Date.now() > deadline) return false;
    await sleep(stepMs);
  }
}

/** The replica whose process runs actor `id` now. */
async function hostOf(t: Test, target: ConformanceTarget, id: string): Promise<number> {
  return Number((await view(t, target, id)).replica);
}

/** Replica restart: kill -9 of the app (and, on Dapr, its daprd when `withSidecar`), then start again. */
async function crashAndRestart(target: ConformanceTarget, replica: number, withSidecar: boolean, downMs = 0): Promise<void> {
  if (withSidecar) await target.cluster.killReplica(replica);
  else await target.cluster.killApp(replica);
  if (downMs > 0) await sleep(downMs);
  await target.cluster.startReplica(replica);
}

export const conformanceCases: ConformanceCase[] = [
  {
    name: "turn-based: 1,000 concurrent calls to one actor run one at a time, each exactly once",
    async run(t, target) {
      const id = freshId("turns");
      const n = 1_000;
      const results = await Promise.all(Array.from({ length: n }, (_, i) => target.call(id, "append", i)));
      const failed = results.filter((r) => r.status !== 200);
      t.equal(failed.length, 0, `all ${n} calls succeed${failed[0] ? ` (first failure: ${failed[0].error?.message})` : ""}`);
      // Each turn saw the log its predecessor committed: the lengths it returned are exactly 1..n.
      const lengths = results.map((r) => Number(r.output)).sort((a, b) => a - b);
      t.same(lengths, Array.from({ length: n }, (_, i) => i + 1), "every turn saw a distinct committed predecessor");
      const state = await view(t, target, id);
      t.equal(state.count, n, "count is n");
      t.same([...state.log].sort((a, b) => a - b), Array.from({ length: n }, (_, i) => i), "each call appended once");
      t.equal(state.maxConcurrent, 1, "never two turns at once");
    },
  },
  {
    name: "parallelism: different actors run their turns at the same time",
    async run(t, target) {
      const ids = Array.from({ length: 8 }, (_, i) => freshId(`par${i}`));
      const sleepMs = 500;
      await Promise.all(ids.map((id) => target.call(id, "get"))); // activate first: measure turns, not activation
      const started = Date.now();
      const results = await Promise.all(ids.map((id) => target.call(id, "sleep", sleepMs)));
      const elapsedMs = Date.now() - started;
      t.ok(results.every((r) => r.status === 200), "all calls succeed");
      t.ok(elapsedMs < sleepMs * 3, `8 × ${sleepMs} ms turns on 8 actors took ${elapsedMs} ms (serial would be ${8 * sleepMs} ms)`);
      // And the same actor does serialize them.
      const one = freshId("serial");
      await target.call(one, "get");
      const t0 = Date.now();
      await Promise.all([target.call(one, "sleep", 300), target.call(one, "sleep", 300), target.call(one, "sleep", 300)]);
      t.ok(Date.now() - t0 >= 880, `3 × 300 ms turns on one actor took ${Date.now() - t0} ms (≥ 900 expected)`);
    },
  },
  {
    name: "a failed turn leaves in-memory and persisted state unchanged, and the error keeps its code",
    async run(t, target) {
      const id = freshId("fail");
      ok(t, await target.call(id, "increment", { by: 2 }), "increment");
      const failed = await target.call(id, "failAfterWrite", "no such thing");
      t.equal(failed.status, 409, "TroupeError status survives the host");
      t.match(failed.error, { name: "TroupeError", code: "conflict", message: "no such thing", details: { reason: "test" } }, "code, message and details intact");
      const plain = await target.call(id, "failPlain");
      t.equal(plain.status, 500, "a plain Error is a 500");
      t.match(plain.error, { message: "plain failure" }, "its message intact");
      const broken = await target.call(id, "breakState");
      t.equal(broken.status, 500, "a turn that leaves a state its schema refuses fails");
      t.match(broken.error, { message: /TestCounter\.breakState left a state that does not match its schema/ }, "the method is named");
      const missing = await target.call(id, "noSuchMethod");
      t.equal(missing.status, 404, "unknown method is not_found");
      let state = await view(t, target, id);
      t.equal(state.count, 2, "in-memory state unchanged after failed turns");
      t.same(state.marks, [], "no partial write");
      await crashAndRestart(target, await hostOf(t, target, id), false);
      state = await view(t, target, id);
      t.equal(state.count, 2, "persisted state unchanged after failed turns (read back after kill -9)");
    },
  },
  {
    name: "an input that fails the method's schema is refused with invalid_request before the turn runs",
    async run(t, target) {
      const id = freshId("input");
      ok(t, await target.call(id, "increment", { by: 2 }), "increment");
      // Had the turn run, `count += "two"` would leave a string count and fail the state check (500), and mark(42) would commit 42.
      const badField = await target.call(id, "increment", { by: "two" });
      t.equal(badField.status, 400, "a mistyped field is a 400");
      t.match(badField.error, { code: "invalid_request", details: [{ path: "input.by" }] }, "the failing field is named");
      const badType = await target.call(id, "mark", 42);
      t.equal(badType.status, 400, "an input of the wrong type is a 400");
      t.match(badType.error, { code: "invalid_request", message: /TestCounter\.mark/ }, "the method is named");
      const state = await view(t, target, id);
      t.equal(state.count, 2, "count unchanged");
      t.same(state.marks, [], "nothing marked");
    },
  },
  {
    name: "state survives kill -9 of the actor app process",
    async run(t, target) {
      const ids = Array.from({ length: 5 }, (_, i) => freshId(`kill${i}`));
      await Promise.all(ids.map((id, i) => target.call(id, "increment", { by: i + 10 })));
      await Promise.all(ids.map((id) => target.call(id, "mark", "before-kill")));
      const pidBefore = (await view(t, target, ids[0]!)).pid;
      await crashAndRestart(target, await hostOf(t, target, ids[0]!), false);
      for (const [i, id] of ids.entries()) {
        const state = await view(t, target, id);
        t.equal(state.count, i + 10, `${id}: count survived`);
        t.same(state.marks, ["before-kill"], `${id}: marks survived`);
      }
      t.not((await view(t, target, ids[0]!)).pid, pidBefore, "served by the new process");
    },
  },
  {
    name: "idle deactivation, and state survives it",
    async run(t, target) {
      const id = freshId("idle");
      ok(t, await target.call(id, "increment", { by: 5 }), "increment");
      t.ok((await target.active()) >= 1, "active after a call");
      const gone = await eventually(async () => (await target.active()) === 0, target.idleTimeoutMs + 20_000, 250);
      t.ok(gone, `all test actors deactivated after the ${target.idleTimeoutMs} ms idle timeout`);
      const state = await view(t, target, id);
      t.equal(state.count, 5, "state read back on reactivation");
      t.ok((await target.active()) >= 1, "reactivated by the call");
    },
  },
  {
    name: "timers fire while the actor is active, periodically until cleared",
    async run(t, target) {
      const id = freshId("timer");
      ok(t, await target.call(id, "armTimer", { dueMs: 100, periodMs: 200 }), "arm a periodic timer");
      const ticked = await eventually(async () => (await view(t, target, id)).marks.length >= 3, 5_000);
      t.ok(ticked, "fired at least 3 times");
      ok(t, await target.call(id, "clearTick"), "clear");
      const after = (await view(t, target, id)).marks.length;
      await sleep(800);
      const later = (await view(t, target, id)).marks.length;
      t.ok(later <= after + 1, `stopped after clearTimer (${after} then ${later})`);
    },
  },
  {
    name: "reminders fire after a restart; timers do not",
    async run(t, target) {
      const id = freshId("durable");
      const dueMs = 8_000; // room for a restart on a loaded 2-core machine (seen: 4 s)
      ok(t, await target.call(id, "armBoth", dueMs), "arm a reminder and a timer");
      const armedAt = Date.now();
      // The actor's whole replica dies (on Dapr its daprd too, which holds the timers) and comes back before the due time.
      await crashAndRestart(target, await hostOf(t, target, id), true);
      t.ok(Date.now() - armedAt < dueMs, `restarted within ${Date.now() - armedAt} ms, before the due time`);
      const fired = await eventually(async () => (await view(t, target, id)).marks.includes("reminder"), dueMs + 20_000, 250);
      t.ok(fired, "the reminder fired after the restart");
      await sleep(Math.max(0, armedAt + dueMs + 1_500 - Date.now()));
      const state = await view(t, target, id);
      t.same(state.marks.filter((m) => m === "reminder"), ["reminder"], "the reminder fired exactly once");
      t.notOk(state.marks.includes("timer"), "the timer died with the process");
    },
  },
  {
    name: "a reminder that fell due while the replica was down fires once when it is back",
    async run(t, target) {
      const id = freshId("overdue");
      ok(t, await target.call(id, "armReminder", { name: "late", dueMs: 1_000 }), "arm");
      await crashAndRestart(target, await hostOf(t, target, id), true, 2_500);
      const fired = await eventually(async () => (await view(t, target, id)).marks.includes("late"), 30_000, 250);
      t.ok(fired, "fired after the restart");
      await sleep(1_500);
      t.same((await view(t, target, id)).marks, ["late"], "exactly once");
    },
  },
  {
    name: "periodic reminders repeat until cleared",
    async run(t, target) {
      const id = freshId("periodic");
      ok(t, await target.call(id, "armReminder", { name: "beat", dueMs: 200, periodMs: 500 }), "arm");
      const repeated = await eventually(async () => (await view(t, target, id)).marks.length >= 3, 10_000, 200);
      t.ok(repeated, "fired at least 3 times");
      ok(t, await target.call(id, "clearReminder", "beat"), "clear");
      const after = (await view(t, target, id)).marks.length;
      await sleep(1_500);
      const later = (await view(t, target, id)).marks.length;
      t.ok(later <= after + 1, `stopped after clearReminder (${after} then ${later})`);
    },
  },
  {
    name: "actor-to-actor calls",
    async run(t, target) {
      const a = freshId("caller");
      const b = freshId("callee");
      t.equal(ok(t, await target.call(a, "relay", { targetId: b, by: 4 }), "relay"), 4, "the callee's answer comes back");
      t.equal(ok(t, await target.call(a, "relay", { targetId: b, by: 1 }), "relay again"), 5, "the callee kept its state");
      t.same((await view(t, target, a)).marks, ["relayed:4", "relayed:5"], "the caller recorded both answers");
      t.equal((await view(t, target, b)).count, 5, "the callee's state");
    },
  },
  {
    name: "afterCommit: a committed turn's announcement goes out after it; a failed turn's is dropped",
    async run(t, target) {
      const a = freshId("announcer");
      const b = freshId("listener");
      const failed = await target.call(a, "announce", { targetId: b, fail: true });
      t.equal(failed.status, 409, "the failing turn fails");
      await sleep(500);
      t.same((await view(t, target, b)).marks, [], "a failed turn announces nothing");
      t.equal(ok(t, await target.call(a, "announce", { targetId: b, fail: false }), "announce"), 1, "the failed turn's count was not committed");
      const heard = await eventually(async () => (await view(t, target, b)).marks.length > 0, 5_000);
      t.ok(heard, "the committed turn's announcement arrived");
      t.same((await view(t, target, b)).marks, ["announced:1"], "once, with what the turn committed");
    },
  },
  {
    name: "afterCommit: a reminder cleared after the commit never fires",
    async run(t, target) {
      const id = freshId("cleared");
      ok(t, await target.call(id, "armThenClearAfterCommit"), "arm, then clear after the commit");
      await sleep(2_000);
      const state = await view(t, target, id);
      t.equal(state.count, 1, "the turn committed");
      t.same(state.marks, [], "the reminder (due after 500 ms, every 500 ms) was cleared before it fired");
    },
  },
  {
    name: "two replicas: killing one re-activates its actors on the other, with their state",
    minReplicas: 2,
    async run(t, target) {
      const ids = Array.from({ length: 24 }, (_, i) => freshId(`spread${i}`));
      await Promise.all(ids.map((id, i) => target.call(id, "increment", { by: i + 1 })));
      const before = await Promise.all(ids.map((id) => view(t, target, id)));
      const onOne = ids.filter((_, i) => before[i]!.replica === "1");
      t.ok(onOne.length > 0 && onOne.length < ids.length, `placement spread the actors (${onOne.length}/${ids.length} on replica 1)`);
      t.ok(
        before.every((s, i) => s.count === i + 1),
        "calls through replica 0 reach actors on either replica",
      );
      await target.cluster.killReplica(1);
      const started = Date.now();
      const moved = await eventually(async () => {
        const states = await Promise.all(ids.map((id) => target.call(id, "get")));
        return states.every((s) => s.status === 200 && counterView.parse(s.output).replica === "0");
      }, 30_000, 250);
      t.ok(moved, `every actor answers from replica 0 after replica 1 died (${Date.now() - started} ms)`);
      const after = await Promise.all(ids.map((id) => view(t, target, id)));
      t.ok(
        after.every((s, i) => s.count === i + 1),
        "each actor re-activated with its state",
      );
      await target.cluster.startReplica(1);
    },
  },
  {
    name: "two replicas: a restarted daprd does not resurrect its app's stale in-memory actors",
    minReplicas: 2,
    async run(t, target) {
      const ids = Array.from({ length: 16 }, (_, i) => freshId(`stale${i}`));
      await Promise.all(ids.map((id) => target.call(id, "increment", { by: 1 })));
      const onOne: string[] = [];
      for (const id of ids) if ((await hostOf(t, target, id)) === 1) onOne.push(id);
      t.ok(onOne.length > 0, `${onOne.length} actors live on replica 1`);
      // Replica 1's daprd dies, its app (holding those actors in memory) lives on.
      await target.cluster.killSidecar(1);
      const moved = await eventually(async () => {
        const results = await Promise.all(onOne.map((id) => target.call(id, "increment", { by: 10 })));
        return results.every((r) => r.status === 200);
      }, 30_000, 250);
      t.ok(moved, "replica 0 took the actors over and wrote new state");
      // daprd comes back; placement hands the actors back to replica 1's app.
      await target.cluster.startReplica(1);
      const back = await eventually(async () => {
        const states = await Promise.all(onOne.map((id) => view(t, target, id)));
        return states.every((s) => s.replica === "1");
      }, 30_000, 250);
      t.ok(back, "the actors went back to replica 1");
      const states = await Promise.all(onOne.map((id) => view(t, target, id)));
      t.ok(
        states.every((s) => s.count === 11),
        `replica 1 serves the state written meanwhile, not its stale copy (${states.map((s) => s.count).join(",")})`,
      );
    },
  },
];

/** Runs every case that fits the target, in order, as tap subtests. */
export async function runConformance(t: Test, target: ConformanceTarget): Promise<void> {
  for (const c of conformanceCases) {
    if ((c.minReplicas ?? 1) > target.replicas) continue;
    await t.test(c.name, (tt) => c.run(tt, target));
  }
}
