// defineActor's own checks, for what the type-checker cannot see (a
// definition built from erased or JSON-derived pieces): each is refused when
// the actor is defined, not on its first call.
import t from "tap";
import { z } from "zod";
import { defineActor } from "../../actors/actor.ts";

const state = z.object({ n: z.number() });
const base = { type: "Fine", state, initialState: () => ({ n: 0 }) };
/** Hides a deliberately wrong method from the type-checker, as a JavaScript caller would pass it. */
const untyped = (method: unknown) => ({ m: method }) as unknown as { m: { input: z.ZodUndefined; run: () => Promise<number> } };

t.test("a well-formed definition is frozen with its methods", async (t) => {
  const actor = defineActor({ ...base, methods: { get: { input: z.undefined(), run: async (ctx) => ctx.state.n } } });
  t.ok(Object.isFrozen(actor) && Object.isFrozen(actor.methods) && Object.isFrozen(actor.methods.get));
  t.equal(actor.methods.get.input.safeParse(undefined).success, true, "the input schema is kept");
});

t.test("malformed definitions are refused when defined", async (t) => {
  t.throws(() => defineActor({ ...base, type: "not a name", methods: {} }), /letters, digits and underscores/);
  t.throws(() => defineActor({ ...base, initialState: () => ({ n: "zero" }) as unknown as { n: number }, methods: {} }), /does not match its state schema/);
  t.throws(() => defineActor({ ...base, methods: untyped({ input: z.undefined() }) }), /Fine\.m\.run is not a function/);
  t.throws(() => defineActor({ ...base, methods: untyped({ input: { type: "string" }, run: async () => 1 }) }), /Fine\.m\.input is not a zod schema/);
  t.throws(() => defineActor({ ...base, methods: untyped(async () => 1) }), /Fine\.m\.run is not a function/, "a bare function (the old shape) is refused");
});
