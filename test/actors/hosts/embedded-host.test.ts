// The embedded host in-process, for what the HTTP-level conformance suite
// cannot see: FIFO order of calls from one caller, the caller receiving the
// very TroupeError instance type, aborting queued calls, graceful stop
// draining queued turns to disk, and the schema check on committed state.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { z } from "zod";
import { systemClock } from "../../../core/clock.ts";
import { TroupeError } from "../../../core/errors.ts";
import { createLogger } from "../../../core/log.ts";
import { defineActor, eraseDefinition } from "../../../actors/actor.ts";
import { callActor, callActorJson } from "../../../actors/host.ts";
import { EmbeddedActorHost, type EmbeddedHostOptions } from "../../../actors/hosts/embedded/embedded-host.ts";
import { ActorStore } from "../../../actors/hosts/embedded/store.ts";
import { CounterActor, testActors } from "../test-actors.ts";

t.setTimeout(30_000);

const Strict = defineActor({
  type: "StrictActor",
  state: z.object({ n: z.number().int().nonnegative() }),
  initialState: () => ({ n: 0 }),
  methods: {
    set: {
      input: z.number(),
      run: async (ctx, n) => {
        ctx.state.n = n;
        return ctx.state.n;
      },
    },
    get: { input: z.undefined(), run: async (ctx) => ctx.state.n },
  },
});

/** Counts the turns it runs, so a test can tell a refused input from a turn that ran and failed. */
let spyRuns = 0;
const Spy = defineActor({
  type: "SpyActor",
  state: z.object({ stamps: z.array(z.string()) }),
  initialState: () => ({ stamps: [] }),
  methods: {
    stamp: {
      input: z.object({ label: z.string().min(1) }).strict(),
      run: async (ctx, input) => {
        spyRuns += 1;
        ctx.state.stamps.push(`${input.label}@${ctx.clock.now()}#${ctx.ids.uuid()}`);
        return ctx.state.stamps;
      },
    },
    /** Answers nothing (callJson's null). */
    nothing: { input: z.undefined(), run: async (): Promise<undefined> => undefined },
    /** Schedules `stamp` with whatever it is given, to check the input is checked when scheduling. */
    scheduleStamp: {
      input: z.unknown(),
      run: async (ctx, input) => {
        await ctx.setTimer("stamp", 10, undefined, "stamp", input as { label: string });
        return true;
      },
    },
  },
});

function newHost(dataDir: string, idleTimeoutMs = 60_000, overrides: Partial<EmbeddedHostOptions> = {}): EmbeddedActorHost {
  const host = new EmbeddedActorHost({ dataDir, idleTimeoutMs, clock: systemClock, log: createLogger("silent"), ...overrides });
  host.register([...testActors.map((d) => eraseDefinition(d)), eraseDefinition(Strict), eraseDefinition(Spy)]);
  return host;
}

const dataDir = mkdtempSync(join(tmpdir(), "troupe-embedded-host-"));

t.test("calls from one caller run in the order they were made", async (t) => {
  const host = newHost(join(dataDir, "fifo"));
  await host.start();
  const calls = Array.from({ length: 200 }, (_, i) => callActor(host, CounterActor, "fifo", "append", i));
  t.same(await Promise.all(calls), Array.from({ length: 200 }, (_, i) => i + 1), "each turn saw its predecessors");
  const state = await callActor(host, CounterActor, "fifo", "get", undefined);
  t.same(state.log, Array.from({ length: 200 }, (_, i) => i), "log in call order");
  await host.stop();
});

t.test("callJson answers the output as JSON text: what call answers, serialized; undefined is null; errors as call's", async (t) => {
  const host = newHost(join(dataDir, "json-text"));
  await host.start();
  const text = await callActorJson(host, Spy, "j", "stamp", { label: "first" });
  t.type(text, "string");
  t.same(JSON.parse(text), await callActor(host, Spy, "j", "stamp", { label: "second" }).then((stamps) => stamps.slice(0, 1)), "the first turn's stamps, as call would hand them over");
  t.same(JSON.parse(await host.callJson("TestCounter", "j", "increment", { by: 2 })), await callActor(host, CounterActor, "j", "increment", { by: 0 }));
  t.equal(await host.callJson("SpyActor", "j", "nothing"), "null", "an undefined output is null");
  t.equal(await host.call("SpyActor", "j", "nothing"), undefined, "(call still answers undefined)");
  await t.rejects(host.callJson("TestCounter", "j", "failAfterWrite", "taken"), { code: "conflict", status: 409, message: "taken" });
  await host.stop();
  await t.rejects(host.callJson("TestCounter", "j", "get"), { code: "service_unavailable" }, "refused after stop");
});

t.test("method errors reach the caller as they were thrown", async (t) => {
  const host = newHost(join(dataDir, "errors"));
  await host.start();
  const error = await host.call("TestCounter", "e", "failAfterWrite", "taken").catch((e: unknown) => e);
  t.ok(error instanceof TroupeError, "a TroupeError");
  t.match(error, { code: "conflict", status: 409, message: "taken", details: { reason: "test" } });
  await t.rejects(host.call("TestCounter", "e", "failPlain"), { message: "plain failure" });
  await t.rejects(host.call("NoSuchType", "e", "get"), { code: "not_found" });
  await t.rejects(host.call("TestCounter", "e", "noSuchMethod"), { code: "not_found" });
  t.equal((await callActor(host, CounterActor, "e", "get", undefined)).count, 0, "state unchanged");
  await t.rejects(callActor(host, CounterActor, "e", "relay", { targetId: "e", by: 1 }), { message: /cannot call itself/ }, "self-calls fail fast");
  await host.stop();
  await t.rejects(host.call("TestCounter", "e", "get"), { code: "service_unavailable" }, "refused after stop");
});

t.test("a turn that leaves state outside its schema fails and commits nothing", async (t) => {
  const host = newHost(join(dataDir, "schema"));
  await host.start();
  t.equal(await callActor(host, Strict, "s", "set", 3), 3);
  await t.rejects(callActor(host, Strict, "s", "set", -1), { code: "internal_error" });
  t.equal(await callActor(host, Strict, "s", "get", undefined), 3, "previous state kept");
  await host.stop();
});

t.test("the method's input schema refuses a bad input before the turn runs; ids and clock are injected", async (t) => {
  let next = 0;
  const host = newHost(join(dataDir, "input"), 60_000, { clock: { now: () => 1_000 }, ids: { uuid: () => `id-${++next}` } });
  await host.start();
  spyRuns = 0;
  t.same(await callActor(host, Spy, "s", "stamp", { label: "a" }), ["a@1000#id-1"], "the turn used the host's clock and ids");
  for (const bad of [{ label: "" }, { label: "b", extra: 1 }, "b", undefined]) {
    const error = await host.call("SpyActor", "s", "stamp", bad).catch((e: unknown) => e);
    t.ok(error instanceof TroupeError, `${JSON.stringify(bad)}: a TroupeError`);
    t.match(error, { code: "invalid_request", status: 400, message: /SpyActor\.stamp/ }, `${JSON.stringify(bad)}: invalid_request naming the method`);
  }
  t.equal(spyRuns, 1, "no refused input ran a turn");
  await t.rejects(callActor(host, Spy, "s", "scheduleStamp", { label: 7 }), { code: "invalid_request" }, "a timer's input is checked when it is set");
  t.ok(await callActor(host, Spy, "s", "scheduleStamp", { label: "t" }), "a valid timer input is accepted");
  await new Promise((r) => setTimeout(r, 100));
  t.equal(spyRuns, 2, "the timer ran its turn");
  t.same(await callActor(host, Spy, "s", "stamp", { label: "c" }), ["a@1000#id-1", "t@1000#id-2", "c@1000#id-3"]);
  await host.stop();
});

t.test("aborting a queued call drops it; the running turn completes", async (t) => {
  const host = newHost(join(dataDir, "abort"));
  await host.start();
  const running = host.call("TestCounter", "a", "sleep", 200);
  const controller = new AbortController();
  const queued = host.call("TestCounter", "a", "append", 1, { signal: controller.signal });
  controller.abort();
  await t.rejects(queued, { name: "AbortError" });
  t.equal(await running, 200);
  t.same((await callActor(host, CounterActor, "a", "get", undefined)).log, [], "the aborted turn never ran");
  await host.stop();
});

t.test("stop() drains queued turns and they are on disk for the next start", async (t) => {
  const dir = join(dataDir, "drain");
  const host = newHost(dir);
  await host.start();
  const pending = [host.call("TestCounter", "d", "sleep", 150), ...[1, 2, 3].map((i) => host.call("TestCounter", "d", "append", i))];
  await host.stop();
  t.same(await Promise.all(pending), [150, 1, 2, 3], "every queued turn ran");
  const again = newHost(dir);
  await again.start();
  t.same((await callActor(again, CounterActor, "d", "get", undefined)).log, [1, 2, 3], "state persisted");
  await again.stop();
});

t.test("activeActors counts per type and drops idle actors", async (t) => {
  const host = newHost(join(dataDir, "idle"), 1_000);
  await host.start();
  await Promise.all(["x", "y", "z"].map((id) => host.call("TestCounter", id, "get")));
  t.same(host.activeActors(), [
    { type: "TestCounter", count: 3 },
    { type: "StrictActor", count: 0 },
    { type: "SpyActor", count: 0 },
  ]);
  await new Promise((r) => setTimeout(r, 1_600));
  t.same(host.activeActors()[0], { type: "TestCounter", count: 0 }, "deactivated after the idle timeout");
  await host.stop();
});

t.test("a turn that leaves the initial state removes the stored state (a deleted resource's actor leaves nothing on disk)", async (t) => {
  const dir = join(dataDir, "removal");
  const stored = async (): Promise<unknown> => {
    const store = new ActorStore(dir);
    try {
      return store.readState("StrictActor", "gone");
    } finally {
      await store.close();
    }
  };
  let host = newHost(dir);
  await host.start();
  await callActor(host, Strict, "gone", "set", 7);
  await host.stop();
  t.same(await stored(), { n: 7 }, "written while it differs from the initial state");
  host = newHost(dir);
  await host.start();
  t.equal(await callActor(host, Strict, "gone", "set", 0), 0);
  t.equal(await callActor(host, Strict, "gone", "get", undefined), 0, "still answers, from its initial state");
  await host.stop();
  t.equal(await stored(), undefined, "no stored state left");
});
