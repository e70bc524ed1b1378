// ActorHost.forget on the embedded host (deleting an organization, and any
// "delete this actor" need): the state and the reminders are gone from the
// store — the actor starts afresh, no reminder fires, not even after a restart.
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

t.setTimeout(30_000);

let fired = 0;
const Reminded = defineActor({
  type: "RemindedActor",
  state: z.object({ notes: z.array(z.string()) }),
  initialState: () => ({ notes: [] }),
  methods: {
    note: {
      input: z.string(),
      run: async (ctx, text) => {
        ctx.state.notes.push(text);
        await ctx.setReminder("later", 500, undefined, "fire", {});
        return ctx.state.notes;
      },
    },
    fire: {
      input: z.object({}),
      run: async () => {
        fired += 1;
        return fired;
      },
    },
    get: { input: z.undefined(), run: async (ctx) => ctx.state.notes },
  },
});

function newHost(dataDir: string): EmbeddedActorHost {
  const host = new EmbeddedActorHost({ dataDir, idleTimeoutMs: 60_000, clock: systemClock, log: createLogger("silent") });
  host.register([eraseDefinition(Reminded)]);
  return host;
}

t.test("a forgotten actor keeps no state and no reminder, across a restart", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "troupe-forget-"));
  const host = newHost(dataDir);
  await host.start();
  await callActor(host, Reminded, "kept", "note", "stays");
  await callActor(host, Reminded, "gone", "note", "secret");
  await host.forget("RemindedActor", "gone");
  t.same(await callActor(host, Reminded, "gone", "get", undefined), [], "a later call starts from the initial state");
  await host.stop();

  fired = 0;
  const again = newHost(dataDir);
  await again.start();
  t.teardown(() => again.stop());
  await new Promise((r) => setTimeout(r, 1200));
  t.equal(fired, 1, "only the kept actor's reminder fired after the restart");
  t.same(await callActor(again, Reminded, "gone", "get", undefined), [], "nothing stored under the forgotten id");
  t.same(await callActor(again, Reminded, "kept", "get", undefined), ["stays"], "the other actor is untouched");
});
