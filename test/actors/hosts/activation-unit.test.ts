// The turn machinery both actor hosts share (actors/hosts/activation.ts),
// built in process on an injected clock with a state write the test records:
// turns run one at a time in arrival order; a failed turn (its method threw,
// its state broke the schema, or its write failed) commits nothing and the
// turn queued behind it still runs; the state is written only when it changed
// (null when back at its initial state); an aborted call leaves the queue;
// lastUsedMs, which the hosts compare with their idle cutoff, is stamped at
// the call and at the end of each turn; timers and reminders are checked
// before the host sees them. The idle deactivation that reads lastUsedMs is
// the host's (embedded-host.ts, covered by embedded-host.test.ts).
import t from "tap";
import { z } from "zod";
import type { ActorContext, AnyActorDefinition } from "../../../actors/actor.ts";
import {
  Activation,
  asJsonText,
  dropLeastRecent,
  jsonCopy,
  markUsed,
  randomIds,
  type ActorServices,
  type ScheduleSpec,
} from "../../../actors/hosts/activation.ts";
import type { Clock } from "../../../core/clock.ts";
import { TroupeError } from "../../../core/errors.ts";
import { createLogger } from "../../../core/log.ts";
import { offlineActorServices } from "../../support/offline-actor-services.ts";

interface Counter {
  n: number;
  label: string;
}

/** A clock the test moves by hand. */
class ManualClock implements Clock {
  ms = 1_000;
  now(): number {
    return this.ms;
  }
}

/** A promise the test resolves when it wants a held turn to go on. */
interface Gate {
  promise: Promise<void>;
  open: () => void;
}
function gate(): Gate {
  let open: () => void = () => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** Lets every pending promise callback and immediate run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

const trail: string[] = [];
const gates = new Map<string, Gate>();
let initialStateCalls = 0;

const stepInput = z.object({ by: z.number().int(), fail: z.boolean().default(false), hold: z.string().optional() });
const scheduleInput = z.object({
  kind: z.enum(["timer", "reminder"]),
  name: z.string(),
  // Left unchecked here so the host side's own checks see NaN and Infinity.
  dueMs: z.unknown(),
  periodMs: z.unknown().optional(),
  method: z.string(),
  input: z.unknown(),
});

const counterOf = (ctx: ActorContext<unknown>): Counter => ctx.state as Counter;

/** Built as hosts hold it (types erased), so the methods can name any method to schedule or call. */
const Unit: AnyActorDefinition = {
  type: "Unit",
  state: z.object({ n: z.number().int(), label: z.string().default("") }),
  initialState: () => {
    initialStateCalls += 1;
    return { n: 0 };
  },
  methods: {
    step: {
      input: stepInput,
      run: async (ctx, raw) => {
        const input = stepInput.parse(raw);
        trail.push(`start:${input.by}`);
        if (input.hold) await gates.get(input.hold)?.promise;
        counterOf(ctx).n += input.by;
        trail.push(`end:${input.by}`);
        if (input.fail) throw new Error(`step ${input.by} failed`);
        return counterOf(ctx).n;
      },
    },
    read: {
      input: z.undefined(),
      run: async (ctx) => counterOf(ctx).n,
    },
    set: {
      input: z.object({ n: z.number().int() }),
      run: async (ctx, raw) => {
        ctx.state = { n: (raw as { n: number }).n, label: "" };
        return null;
      },
    },
    /** Leaves a key the schema does not know: the committed JSON is the schema's output, without it. */
    extra: {
      input: z.undefined(),
      run: async (ctx) => {
        ctx.state = { n: 7, stray: true };
        return null;
      },
    },
    breakState: {
      input: z.undefined(),
      run: async (ctx) => {
        ctx.state = { n: "seven" };
        return null;
      },
    },
    probe: {
      input: z.undefined(),
      run: async (ctx) => {
        ctx.log.info("probed", { n: counterOf(ctx).n });
        ctx.log.info("again");
        return { type: ctx.type, id: ctx.id, now: ctx.clock.now(), uuid: ctx.ids.uuid() };
      },
    },
    callOther: {
      input: z.object({ type: z.string(), id: z.string() }),
      run: async (ctx, raw) => {
        const input = raw as { type: string; id: string };
        return ctx.call({ type: input.type }, input.id, "ping", { x: 1 });
      },
    },
    schedule: {
      input: scheduleInput,
      run: async (ctx, raw) => {
        const s = scheduleInput.parse(raw);
        if (s.kind === "timer") await ctx.setTimer(s.name, s.dueMs as number, s.periodMs as number | undefined, s.method, s.input);
        else await ctx.setReminder(s.name, s.dueMs as number, s.periodMs as number | undefined, s.method, s.input);
        return "scheduled";
      },
    },
    unschedule: {
      input: z.object({ kind: z.enum(["timer", "reminder"]), name: z.string() }),
      run: async (ctx, raw) => {
        const input = raw as { kind: "timer" | "reminder"; name: string };
        await (input.kind === "timer" ? ctx.clearTimer(input.name) : ctx.clearReminder(input.name));
        return "cleared";
      },
    },
    /** Fails, leaving a promise behind that tries ctx.afterCommit once the gate "late" opens. */
    failLeavingPromise: {
      input: z.undefined(),
      run: async (ctx) => {
        void gates.get("late")?.promise.then(() => {
          try {
            ctx.afterCommit(() => trail.push("late announcement ran"));
            trail.push("late announcement queued");
          } catch (error) {
            trail.push(`refused: ${(error as Error).message}`);
          }
        });
        throw new Error("failed on purpose");
      },
    },
    announce: {
      input: z.undefined(),
      run: async (ctx) => {
        counterOf(ctx).n += 1;
        ctx.afterCommit(() => {
          throw new Error("sync announcement failed");
        });
        ctx.afterCommit(() => Promise.reject(new Error("async announcement failed")));
        ctx.afterCommit(() => trail.push("announced"));
        // Queued from an announcement: the turn has ended, so it is refused (and logged) rather than run.
        ctx.afterCommit(() => ctx.afterCommit(() => trail.push("nested")));
        trail.push("ran");
        return "done";
      },
    },
  },
};

interface Harness {
  activation: Activation;
  clock: ManualClock;
  writes: Array<string | null>;
  refuseWrites: { on: boolean };
  logLines: Array<Record<string, unknown>>;
  scheduled: Array<{ op: string; type: string; id: string; arg: ScheduleSpec | string }>;
  calls: Array<[string, string, string, unknown]>;
}

function harness(stateJson = JSON.stringify({ n: 0, label: "" }), id = "u1"): Harness {
  const clock = new ManualClock();
  const writes: Array<string | null> = [];
  const refuseWrites = { on: false };
  const logLines: Array<Record<string, unknown>> = [];
  const scheduled: Harness["scheduled"] = [];
  const calls: Harness["calls"] = [];
  const services: ActorServices = offlineActorServices({
    clock,
    ids: { uuid: () => "fixed-uuid" },
    log: createLogger("info", {}, (line) => logLines.push(JSON.parse(line) as Record<string, unknown>)),
    call: async (type, targetId, method, input) => {
      calls.push([type, targetId, method, input]);
      return "pong";
    },
    setTimer: async (type, actorId, spec) => void scheduled.push({ op: "setTimer", type, id: actorId, arg: spec }),
    clearTimer: async (type, actorId, name) => void scheduled.push({ op: "clearTimer", type, id: actorId, arg: name }),
    setReminder: async (type, actorId, spec) => void scheduled.push({ op: "setReminder", type, id: actorId, arg: spec }),
    clearReminder: async (type, actorId, name) => void scheduled.push({ op: "clearReminder", type, id: actorId, arg: name }),
  });
  const activation = new Activation(Unit, id, stateJson, services, async (json) => {
    if (refuseWrites.on) throw new Error("store unavailable");
    writes.push(json);
  });
  return { activation, clock, writes, refuseWrites, logLines, scheduled, calls };
}

t.beforeEach(() => {
  trail.length = 0;
  gates.clear();
});

t.test("turns run one at a time in arrival order, each on the state the one before committed", async (t) => {
  const { activation, writes } = harness();
  const a = gate();
  gates.set("a", a);
  t.ok(activation.idle, "idle before any call");
  const first = activation.invoke("step", { by: 1, hold: "a" });
  const second = activation.invoke("step", { by: 10 });
  const third = activation.invoke("step", { by: 100 });
  await settle();
  t.same(trail, ["start:1"], "the second turn waits for the first, though the first is awaiting");
  t.notOk(activation.idle, "not idle while a turn runs");
  let idleSeen = false;
  const idle = activation.whenIdle().then(() => {
    idleSeen = true;
  });
  await settle();
  t.notOk(idleSeen, "whenIdle waits for the running turn and the queued ones");
  a.open();
  t.same(await Promise.all([first, second, third]), [1, 11, 111], "each turn sees the previous turn's committed state");
  await idle;
  t.ok(idleSeen);
  t.same(trail, ["start:1", "end:1", "start:10", "end:10", "start:100", "end:100"], "never two turns at once");
  t.same(writes, ['{"n":1,"label":""}', '{"n":11,"label":""}', '{"n":111,"label":""}'], "one write per turn");
  t.ok(activation.idle, "idle once the queue is drained");
  t.equal(activation.committedStateJson, '{"n":111,"label":""}');
  let again = false;
  await activation.whenIdle().then(() => {
    again = true;
  });
  t.ok(again, "whenIdle resolves at once when idle");
  t.equal(await activation.invoke("read", undefined), 111, "a call after the drain starts a new one");
});

t.test("a failed turn commits nothing, and the turn queued behind it runs on the last committed state", async (t) => {
  const { activation, writes } = harness();
  const a = gate();
  gates.set("a", a);
  const failing = activation.invoke("step", { by: 5, fail: true, hold: "a" });
  const queued = activation.invoke("step", { by: 2 });
  a.open();
  await t.rejects(failing, { message: "step 5 failed" });
  t.equal(await queued, 2, "the queued turn runs, on n = 0: the failed turn's +5 is gone");
  t.same(writes, ['{"n":2,"label":""}'], "the failed turn wrote nothing");
  t.equal(activation.committedStateJson, '{"n":2,"label":""}');
  t.ok(activation.idle);
});

t.test("a state write that fails fails the turn and keeps the previous state in memory", async (t) => {
  const { activation, writes, refuseWrites } = harness();
  t.equal(await activation.invoke("step", { by: 3 }), 3);
  refuseWrites.on = true;
  await t.rejects(activation.invoke("step", { by: 4 }), { message: "store unavailable" });
  t.equal(activation.committedStateJson, '{"n":3,"label":""}', "the refused state is not kept");
  refuseWrites.on = false;
  t.equal(await activation.invoke("step", { by: 1 }), 4, "the next turn starts from the committed 3");
  t.same(writes, ['{"n":3,"label":""}', '{"n":4,"label":""}']);
});

t.test("the state is written only when it changed, null when back at its initial state, as the schema outputs it", async (t) => {
  const { activation, writes } = harness();
  t.equal(await activation.invoke("read", undefined), 0);
  t.same(writes, [], "a turn that changes nothing writes nothing");
  await activation.invoke("set", { n: 5 });
  await activation.invoke("set", { n: 5 });
  t.same(writes, ['{"n":5,"label":""}'], "the same state twice: one write");
  await activation.invoke("set", { n: 0 });
  t.same(writes, ['{"n":5,"label":""}', null], "back at the initial state: the stored state is removed");
  t.equal(activation.committedStateJson, '{"n":0,"label":""}', "in memory it is the initial state's JSON");
  await activation.invoke("extra", undefined);
  t.equal(writes.at(-1), '{"n":7,"label":""}', "the schema's output: the stray key is dropped, the default filled in");
  t.equal(activation.committedStateJson, '{"n":7,"label":""}');
});

t.test("a state that breaks the schema fails the turn; an untouched state the schema refuses does not", async (t) => {
  const { activation, writes } = harness();
  const broken = await activation.invoke("breakState", undefined).then(
    () => undefined,
    (error: unknown) => error,
  );
  t.ok(broken instanceof TroupeError, "a TroupeError");
  t.match(broken, { code: "internal_error", message: "Unit.breakState left a state that does not match its schema." });
  t.ok((broken as TroupeError).cause instanceof z.ZodError, "the schema's error is its cause");
  t.same(writes, []);

  // A stored state an older schema wrote: a turn that leaves it as it is must still answer.
  const old = harness('{"n":"legacy"}');
  t.equal(await old.activation.invoke("callOther", { type: "Other", id: "o1" }), "pong");
  t.same(old.writes, [], "nothing written");
  t.equal(old.activation.committedStateJson, '{"n":"legacy"}');
});

t.test("a method the type does not declare is not found; an input its schema refuses is a 400 naming the field", async (t) => {
  const { activation } = harness();
  await t.rejects(activation.invoke("missing", {}), { code: "not_found", message: "Actor type Unit has no method missing." });
  await t.rejects(activation.invoke("toString", {}), { code: "not_found", message: "Actor type Unit has no method toString." }, "an inherited property is no method");
  const refused = activation.invoke("step", { by: "two" });
  await t.rejects(refused, {
    code: "invalid_request",
    message: "invalid input for Unit.step: input.by: Invalid input: expected number, received string",
    details: [{ path: "input.by", message: "Invalid input: expected number, received string" }],
  });
  await t.rejects(activation.invoke("step", { by: "two", fail: "yes" }), {
    message: "invalid input for Unit.step: input.by: Invalid input: expected number, received string; input.fail: Invalid input: expected boolean, received string",
  }, "each field refused, separated by semicolons");
  t.same(trail, [], "the method never ran");
  t.equal(await activation.invoke("step", { by: 1 }), 1, "the queue goes on after them");
});

t.test("the context names the actor and carries the host's clock, ids and a logger with the actor's fields", async (t) => {
  const { activation, clock, logLines } = harness(undefined, "u7");
  clock.ms = 42_000;
  t.same(await activation.invoke("probe", undefined), { type: "Unit", id: "u7", now: 42_000, uuid: "fixed-uuid" });
  t.match(logLines, [
    { level: "info", msg: "probed", actor_type: "Unit", actor_id: "u7", n: 0 },
    { level: "info", msg: "again", actor_type: "Unit", actor_id: "u7" },
  ]);
  t.equal(logLines.length, 2);
});

t.test("afterCommit functions run after the commit, in order; what they throw or reject with is logged", async (t) => {
  const { activation, writes, logLines } = harness();
  t.equal(await activation.invoke("announce", undefined), "done");
  t.same(trail, ["ran", "announced"], "a throwing one does not stop the ones after it");
  t.same(writes, ['{"n":1,"label":""}']);
  await settle();
  t.match(logLines, [
    { level: "warn", msg: "an afterCommit function failed", method: "announce", actor_type: "Unit", actor_id: "u1", error: { message: "sync announcement failed" } },
    { level: "warn", msg: "an afterCommit function failed", method: "announce", error: { message: "Unit.announce: afterCommit called after the turn ended" } },
    { level: "warn", msg: "an afterCommit function failed", method: "announce", actor_type: "Unit", error: { message: "async announcement failed" } },
  ]);
  t.equal(logLines.length, 3);
});

t.test("an afterCommit queued after a failed turn ended is refused too", async (t) => {
  const { activation } = harness();
  const late = gate();
  gates.set("late", late);
  await t.rejects(activation.invoke("failLeavingPromise", undefined), { message: "failed on purpose" });
  late.open();
  await settle();
  t.same(trail, ["refused: Unit.failLeavingPromise: afterCommit called after the turn ended"]);
});

t.test("a call to another actor goes to the host; a call to itself is refused", async (t) => {
  const { activation, calls } = harness();
  t.equal(await activation.invoke("callOther", { type: "Other", id: "u1" }), "pong", "same id, another type");
  t.equal(await activation.invoke("callOther", { type: "Unit", id: "u2" }), "pong", "same type, another id");
  t.same(calls, [
    ["Other", "u1", "ping", { x: 1 }],
    ["Unit", "u2", "ping", { x: 1 }],
  ]);
  await t.rejects(activation.invoke("callOther", { type: "Unit", id: "u1" }), { message: "Unit/u1 cannot call itself (actor turns are not reentrant)" });
  t.equal(calls.length, 2, "the host never saw it");
});

t.test("timers and reminders reach the host with the actor's type and id, checked first", async (t) => {
  const { activation, scheduled } = harness();
  const timer = { kind: "timer", name: "tick", dueMs: 0, method: "step", input: { by: 1 } };
  t.equal(await activation.invoke("schedule", timer), "scheduled", "dueMs 0 is allowed, periodMs may be left out");
  t.equal(await activation.invoke("schedule", { ...timer, kind: "reminder", name: "nag", dueMs: 5, periodMs: 1 }), "scheduled");
  await activation.invoke("unschedule", { kind: "timer", name: "tick" });
  await activation.invoke("unschedule", { kind: "reminder", name: "nag" });
  t.same(scheduled, [
    { op: "setTimer", type: "Unit", id: "u1", arg: { name: "tick", dueMs: 0, periodMs: undefined, method: "step", input: { by: 1 } } },
    { op: "setReminder", type: "Unit", id: "u1", arg: { name: "nag", dueMs: 5, periodMs: 1, method: "step", input: { by: 1 } } },
    { op: "clearTimer", type: "Unit", id: "u1", arg: "tick" },
    { op: "clearReminder", type: "Unit", id: "u1", arg: "nag" },
  ]);
  scheduled.length = 0;

  const refusals: Array<[Record<string, unknown>, RegExp | { code: string; message: string }]> = [
    [{ method: "nope" }, /^Unit has no method nope to schedule$/],
    [{ method: "toString" }, /^Unit has no method toString to schedule$/],
    [{ input: { by: "x" } }, { code: "invalid_request", message: "invalid input for Unit.step: input.by: Invalid input: expected number, received string" }],
    [{ name: "" }, /^timer\/reminder name "" must be non-empty without "\/"$/],
    [{ name: "a/b" }, /^timer\/reminder name "a\/b" must be non-empty without "\/"$/],
    [{ dueMs: -1 }, /^dueMs must be a non-negative number, got -1$/],
    [{ dueMs: Number.POSITIVE_INFINITY }, /^dueMs must be a non-negative number, got Infinity$/],
    [{ dueMs: Number.NaN }, /^dueMs must be a non-negative number, got NaN$/],
    [{ periodMs: 0 }, /^periodMs must be positive when given, got 0$/],
    [{ periodMs: -5 }, /^periodMs must be positive when given, got -5$/],
    [{ periodMs: Number.POSITIVE_INFINITY }, /^periodMs must be positive when given, got Infinity$/],
  ];
  for (const kind of ["timer", "reminder"]) {
    for (const [change, expected] of refusals) {
      const spec = { ...timer, kind, ...change };
      if (expected instanceof RegExp) await t.rejects(activation.invoke("schedule", spec), { message: expected }, `${kind} ${JSON.stringify(change)}`);
      else await t.rejects(activation.invoke("schedule", spec), expected, `${kind} ${JSON.stringify(change)}`);
    }
  }
  t.same(scheduled, [], "the host never saw a refused one");
});

t.test("lastUsedMs is the clock at construction, at each call and at the end of each turn", async (t) => {
  const { activation, clock } = harness();
  t.equal(activation.lastUsedMs, 1_000, "built at 1000");
  const a = gate();
  gates.set("a", a);
  clock.ms = 2_000;
  const held = activation.invoke("step", { by: 1, hold: "a" });
  t.equal(activation.lastUsedMs, 2_000, "stamped when the call arrives");
  await settle();
  t.notOk(activation.idle, "one turn running, none queued: not idle");
  clock.ms = 2_500;
  const queued = activation.invoke("step", { by: 1 });
  t.equal(activation.lastUsedMs, 2_500, "a queued call stamps it too");
  clock.ms = 3_000;
  a.open();
  await held;
  await queued;
  t.equal(activation.lastUsedMs, 3_000, "stamped again when the last turn ends, so a host's idle cutoff counts from then");
  clock.ms = 4_000;
  await t.rejects(activation.invoke("step", { by: 1, fail: true }));
  t.equal(activation.lastUsedMs, 4_000, "a failed turn is a use too");
  clock.ms = 9_000;
  t.equal(activation.lastUsedMs, 4_000, "nothing else moves it");
  // The embedded host deactivates an idle activation whose lastUsedMs <= now - idleMs: 1 ms either side of it.
  const idleMs = 5_000;
  t.notOk(activation.lastUsedMs <= 8_999 - idleMs, "at 8999 it is 1 ms short of the idle timeout");
  t.ok(activation.lastUsedMs <= 9_000 - idleMs, "at 9000 it is due");
  t.ok(activation.idle);
});

t.test("an aborted call: refused before it queues, dropped from the queue, or no longer awaited while it runs", async (t) => {
  const { activation, writes } = harness();

  const pre = new AbortController();
  pre.abort(new Error("gone already"));
  await t.rejects(activation.invoke("step", { by: 1 }, pre.signal), { message: "gone already" }, "the signal's reason");
  t.same(trail, [], "never ran");
  const reasonless = { aborted: true, reason: undefined } as unknown as AbortSignal;
  await t.rejects(activation.invoke("step", { by: 1 }, reasonless), { name: "AbortError", message: "The operation was aborted." }, "no reason: an AbortError");
  t.ok(activation.idle, "nothing queued");

  const a = gate();
  gates.set("a", a);
  const running = new AbortController();
  const queued = new AbortController();
  const first = activation.invoke("step", { by: 1, hold: "a" }, running.signal);
  const second = activation.invoke("step", { by: 10 }, queued.signal);
  const third = activation.invoke("step", { by: 100 });
  await settle();
  queued.abort(new Error("queued call gone"));
  await t.rejects(second, { message: "queued call gone" });
  running.abort(new Error("running call gone"));
  await t.rejects(first, { message: "running call gone" }, "the caller stops waiting");
  a.open();
  t.equal(await third, 101, "the running turn still committed its +1; the dropped one never ran");
  t.same(trail, ["start:1", "end:1", "start:100", "end:100"]);
  t.same(writes, ['{"n":1,"label":""}', '{"n":101,"label":""}']);

  const late = new AbortController();
  t.equal(await activation.invoke("read", undefined, late.signal), 101, "a call with a signal that never aborts answers");
  late.abort(new Error("after the answer"));
  await settle();
  const failedLate = new AbortController();
  await t.rejects(activation.invoke("step", { by: 1, fail: true }, failedLate.signal), { message: "step 1 failed" }, "a failing call with a signal rejects with its error");
  failedLate.abort(new Error("after the failure"));
  t.equal(await activation.invoke("read", undefined), 101, "and the queue goes on");
});

t.test("the initial state is computed once per definition", async (t) => {
  const before = initialStateCalls;
  harness();
  harness();
  t.ok(initialStateCalls - before <= 1, "at most once more for two activations");
  const { activation, writes } = harness('{"n":3,"label":""}');
  await activation.invoke("set", { n: 0 });
  t.same(writes, [null], "still compared with it");
});

t.test("markUsed moves a key to the end of the Map", async (t) => {
  const m = new Map([
    ["a", 1],
    ["b", 2],
    ["c", 3],
  ]);
  markUsed(m, "a", 9);
  t.same([...m], [
    ["b", 2],
    ["c", 3],
    ["a", 9],
  ]);
  markUsed(m, "d", 4);
  t.same([...m.keys()], ["b", "c", "a", "d"]);
});

t.test("dropLeastRecent drops the oldest droppable entries down to keep, within the scan limit", async (t) => {
  const make = (): Map<string, number> => new Map(["a", "b", "c", "d", "e"].map((k, i) => [k, i]));
  let m = make();
  const dropped: string[] = [];
  dropLeastRecent(m, 3, () => true, { dropped: (k) => dropped.push(k) });
  t.same([...m.keys()], ["c", "d", "e"], "two oldest gone");
  t.same(dropped, ["a", "b"]);

  m = make();
  dropLeastRecent(m, 3, (k) => k !== "a" && k !== "c");
  t.same([...m.keys()], ["a", "c", "e"], "undroppable ones are skipped, not counted");

  m = make();
  dropLeastRecent(m, 5, () => true);
  t.equal(m.size, 5, "at keep: nothing dropped");
  dropLeastRecent(m, 4, () => true);
  t.same([...m.keys()], ["b", "c", "d", "e"], "one over keep: one dropped");

  m = make();
  dropLeastRecent(m, 0, (k) => k !== "a", { scanLimit: 2 });
  t.same([...m.keys()], ["a", "c", "d", "e"], "two entries looked at: a kept, b dropped, no further");
  m = make();
  dropLeastRecent(m, 0, () => true, { scanLimit: 0 });
  t.equal(m.size, 5, "scan limit 0: nothing looked at");
  m = make();
  dropLeastRecent(m, 0, () => true);
  t.equal(m.size, 0, "no scan limit: down to keep");
});

t.test("helpers: random version 7 ids, JSON copies, JSON text", async (t) => {
  const a = randomIds.uuid();
  t.match(a, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  t.not(randomIds.uuid(), a);
  const value = { a: [1, { b: 2 }] };
  const copy = jsonCopy(value);
  t.same(copy, value);
  t.not(copy, value, "not the same object");
  t.equal(jsonCopy(undefined), undefined);
  t.equal(asJsonText(undefined), "null");
  t.equal(asJsonText({ a: 1 }), '{"a":1}');
  t.equal(asJsonText("x"), '"x"');
});
