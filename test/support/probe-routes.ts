// Routes the test suite registers to exercise the AI-endpoint pipeline
// (API key, scope, rate limit, validation) independently of real AI routes.
import { z } from "zod";
import { defineRoute, json, type Scope } from "../../gateway/route.ts";

export function probeRoutes() {
  const probe = (scope: Scope) =>
    defineRoute({
      method: "post",
      path: `/v1/test-probe/${scope}`,
      summary: `probe for scope ${scope}`,
      tag: "test",
      auth: "api_key",
      scope,
      body: z.object({ n: z.number().int().min(0).max(10), tags: z.array(z.string()).max(3).optional() }).strict(),
      responses: { 200: z.object({ ok: z.boolean() }) },
      handler: async (ctx) => json(200, { ok: true, n: ctx.body.n, key_id: ctx.auth.key.id }),
    });
  return [
    probe("chat"),
    probe("images"),
    defineRoute({
      method: "get",
      path: "/v1/test-probe/slow",
      summary: "waits, for graceful shutdown tests",
      tag: "test",
      auth: "none",
      query: z.object({ ms: z.coerce.number().int().min(0).max(5000) }).strict(),
      responses: { 200: z.object({ waited: z.number() }) },
      handler: async (ctx) => {
        await new Promise((r) => setTimeout(r, ctx.query.ms));
        return json(200, { waited: ctx.query.ms });
      },
    }),
  ];
}
