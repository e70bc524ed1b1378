// The embedded host's resident cap (ACTOR_MAX_RESIDENT): with a cap of 50
// and 500 actors, memory follows the active set — at most 50 actors stay
// resident — and eviction loses nothing: every actor answers with its full
// history, calls racing the eviction of their actor all land (eviction runs
// only between turns, under the turn lock), a reminder of an evicted actor
// still fires, and an actor with an armed timer is not evicted.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { z } from "zod";
import { systemClock } from "../../../core/clock.ts";
import { createLogger } from "../../../core/log.ts";
import { defineActor, eraseDefinition } from "../../../actors/actor.ts";
import { callActor } from "../../../actors/host.ts";
import { EmbeddedActorHost } from "../../../actors/hosts/embedded/embedded-host.ts";

t.setTimeout(120_000);

const cap = 50;
const actors = 500;
const rounds = 4;

/** An append that yields mid-turn, so a second activation of the same id (an eviction under a running turn) would overwrite it. */
const Journal = defineActor({
  type: "JournalActor",
  state: z.object({ entries: z.array(z.string()) }),
  initialState: () => ({ entries: [] }),
  methods: {
    append: {
      input: z.string(),
      run: async (ctx, entry) => {
        const before = ctx.state.entries.length;
        await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 4)));
        ctx.state.entries.push(entry);
        return before + 1;
      },
    },
    /** Holds its turn for 200 ms before appending. */
    slowAppend: {
      input: z.string(),
      run: async (ctx, entry) => {
        await new Promise((resolve) => setTimeout(resolve, 200));
        ctx.state.entries.push(entry);
        return ctx.state.entries.length;
      },
    },
    entries: { input: z.undefined(), run: async (ctx) => ctx.state.entries },
    remindMe: {
      input: z.number(),
      run: async (ctx, dueMs) => {
        await ctx.setReminder("ring", dueMs, undefined, "append", "reminder");
        return true;
      },
    },
    timeMe: {
      input: z.number(),
      run: async (ctx, dueMs) => {
        await ctx.setTimer("tick", dueMs, undefined, "append", "timer");
        return true;
      },
    },
  },
});

const idOf = (i: number) => `journal-${i}`;
const dataDir = mkdtempSync(join(tmpdir(), "troupe-embedded-eviction-"));

function newHost(dir: string): EmbeddedActorHost {
  const host = new EmbeddedActorHost({ dataDir: dir, idleTimeoutMs: 3_600_000, maxResident: cap, clock: systemClock, log: createLogger("silent") });
  host.register([eraseDefinition(Journal)]);
  return host;
}

const resident = (host: EmbeddedActorHost) => host.activeActors().find((c) => c.type === Journal.type)?.count ?? 0;

t.test("500 actors under a cap of 50: resident ≤ cap, full histories, concurrent calls on one id lose nothing", async (t) => {
  const dir = join(dataDir, "cap");
  const host = newHost(dir);
  await host.start();
  // Every call of every round, shuffled, so calls on one id overlap while other ids push it out.
  const calls: Array<[number, string]> = [];
  for (let round = 0; round < rounds; round++) for (let i = 0; i < actors; i++) calls.push([i, `r${round}`]);
  for (let i = calls.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [calls[i], calls[j]] = [calls[j] as [number, string], calls[i] as [number, string]];
  }
  let maxResident = 0;
  let next = 0;
  // 40 callers in flight: at most 40 actors are mid-turn, so the cap can always be met.
  const worker = async () => {
    for (let call = calls[next++]; call; call = calls[next++]) {
      const pending = callActor(host, Journal, idOf(call[0]), "append", call[1]);
      maxResident = Math.max(maxResident, resident(host));
      await pending;
      maxResident = Math.max(maxResident, resident(host));
    }
  };
  await Promise.all(Array.from({ length: 40 }, worker));
  t.ok(maxResident <= cap, `at most ${cap} actors resident at any time (saw ${maxResident})`);

  const expected = Array.from({ length: rounds }, (_, round) => `r${round}`);
  let complete = 0;
  for (let i = 0; i < actors; i++) {
    const entries = await callActor(host, Journal, idOf(i), "entries", undefined);
    if (JSON.stringify([...entries].sort()) === JSON.stringify(expected)) complete += 1;
    else t.fail(`${idOf(i)} holds ${JSON.stringify(entries)}`);
  }
  t.equal(complete, actors, "every actor answers with all its entries after being evicted and activated again");
  t.ok(resident(host) <= cap, "reading them back stays within the cap");
  await host.stop();

  // What the store holds is the same history (nothing was only in memory).
  const again = newHost(dir);
  await again.start();
  const stored = await callActor(again, Journal, idOf(7), "entries", undefined);
  t.same([...stored].sort(), expected, "the store holds the full history");
  await again.stop();
});

t.test("a call racing the eviction of its actor mid-turn lands in the same activation", async (t) => {
  const host = newHost(join(dataDir, "race"));
  await host.start();
  for (let round = 0; round < 10; round++) {
    const id = `hot-${round}`;
    const slow = callActor(host, Journal, id, "slowAppend", "first");
    // Activations happen as calls are made: these make the mid-turn actor the least recently used of 61 (cap 50).
    const fillers = Array.from({ length: cap + 10 }, (_, j) => callActor(host, Journal, `filler-${round}-${j}`, "entries", undefined));
    const second = callActor(host, Journal, id, "append", "second");
    await Promise.all([slow, second, ...fillers]);
    t.same(await callActor(host, Journal, id, "entries", undefined), ["first", "second"], `${id}: the call queued behind the running turn`);
  }
  await host.stop();
});

t.test("a reminder of an evicted actor fires; an actor with an armed timer stays resident", async (t) => {
  const host = newHost(join(dataDir, "schedules"));
  await host.start();
  await callActor(host, Journal, "reminded", "append", "before");
  // Both due long enough after the 150 calls below, even on a busy machine.
  const dueMs = 5_000;
  const armedAt = Date.now();
  await callActor(host, Journal, "reminded", "remindMe", dueMs);
  await callActor(host, Journal, "timed", "append", "before");
  await callActor(host, Journal, "timed", "timeMe", dueMs);
  // Both are now the least recently used of far more than the cap.
  await Promise.all(Array.from({ length: 3 * cap }, (_, i) => callActor(host, Journal, idOf(i), "entries", undefined)));
  if (Date.now() - armedAt < dueMs) t.notOk(host.isActive(Journal.type, "reminded"), "the reminded actor was evicted");
  else t.comment("the machine took longer than the reminder's due time to evict it; eviction not checked this run");
  t.ok(host.isActive(Journal.type, "timed"), "the actor with an armed timer was kept (its timer lives in memory)");
  t.ok(resident(host) <= cap + 1, "only the timer's holder is over the cap");
  const settled = async (id: string, want: number) => {
    const until = Date.now() + 15_000;
    for (;;) {
      const entries = await callActor(host, Journal, id, "entries", undefined);
      if (entries.length >= want || Date.now() > until) return entries;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  t.same(await settled("reminded", 2), ["before", "reminder"], "the reminder fired and found its history");
  t.same(await settled("timed", 2), ["before", "timer"], "the timer fired");
  await host.stop();
});
