// A turn runs in the async context of the call that queued it
// (actors/hosts/activation.ts), not in that of the call that happened to find
// the queue idle and drain it: a request's context (its trace, its cache
// control, its key's model allowlist) is an AsyncLocalStorage store, and a
// turn queued behind another request's turn must see its own.
import { AsyncLocalStorage } from "node:async_hooks";
import t from "tap";
import { z } from "zod";
import { defineActor, eraseDefinition } from "../../../actors/actor.ts";
import { Activation } from "../../../actors/hosts/activation.ts";
import { offlineActorServices } from "../../support/offline-actor-services.ts";

const requestContext = new AsyncLocalStorage<string>();
let releaseFirst: () => void = () => {};
const firstHeld = new Promise<void>((resolve) => {
  releaseFirst = resolve;
});

const Reader = defineActor({
  type: "ContextReader",
  state: z.object({ seen: z.array(z.string()) }),
  initialState: () => ({ seen: [] }),
  methods: {
    read: {
      input: z.object({ hold: z.boolean() }),
      run: async (ctx, input) => {
        if (input.hold) await firstHeld;
        // Read after an await too: the context must hold across the turn's own promises.
        await new Promise((resolve) => setImmediate(resolve));
        const seen = requestContext.getStore() ?? "none";
        ctx.state.seen.push(seen);
        return seen;
      },
    },
  },
});

t.test("each queued turn sees the context of the call that queued it", async (t) => {
  const activation = new Activation(eraseDefinition(Reader), "r1", JSON.stringify({ seen: [] }), offlineActorServices(), async () => {});
  const first = requestContext.run("request-a", () => activation.invoke("read", { hold: true }));
  const second = requestContext.run("request-b", () => activation.invoke("read", { hold: false }));
  const third = activation.invoke("read", { hold: false });
  releaseFirst();
  t.same(await Promise.all([first, second, third]), ["request-a", "request-b", "none"], "a: its own; b: its own, though a's call drained the queue; the third: no request");
});
