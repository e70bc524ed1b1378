// Troupe with one extra authenticated no-op route (API key, scope check,
// rate limit, zod validation of the body): the gateway's own cost. Embedded
// mode, logs at warn (per-request access logs off). Prints its port.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { loadConfig } from "../../gateway/config.ts";
import { createLogger } from "../../core/log.ts";
import { startTroupe } from "../../gateway/app.ts";
import { defineRoute, json } from "../../gateway/route.ts";

const config = loadConfig({
  PORT: "0",
  HOST: "127.0.0.1",
  LOG_LEVEL: "warn",
  DEFAULT_RATE_LIMIT_PER_MINUTE: "10000000",
  TROUPE_DATA_DIR: mkdtempSync(join(tmpdir(), "troupe-bench-")),
});
const noop = defineRoute({
  method: "post",
  path: "/v1/bench/noop",
  summary: "benchmark no-op",
  tag: "bench",
  auth: "api_key",
  scope: "chat",
  body: z.object({ messages: z.array(z.object({ role: z.enum(["user", "assistant"]), content: z.string() })).min(1) }).strict(),
  responses: { 200: z.object({ ok: z.boolean() }) },
  handler: async () => json(200, { ok: true }),
});
const troupe = await startTroupe(config, createLogger("warn"), { extraRoutes: () => [noop] });
process.stdout.write(`PORT=${troupe.port}\n`);
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => void troupe.stop().then(() => process.exit(0)));
}
