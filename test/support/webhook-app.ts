// A Troupe replica for webhook tests and the webhook benchmark: the real
// startTroupe (embedded or TROUPE_MODE=dapr, from the environment) plus one
// test-only route that publishes an OrganizationEvent through the replica's
// EventPublisher, standing in for the JobActor and budget emitters, so a
// child process can be fed events over HTTP and killed with -9.
import { z } from "zod";
import { loadConfig } from "../../gateway/config.ts";
import { createLogger } from "../../core/log.ts";
import type { OrganizationEvent } from "../../core/organization-events.ts";
import { startTroupe } from "../../gateway/app.ts";
import { defineRoute, json } from "../../gateway/route.ts";

import { publishPath } from "./webhook-publish-path.ts";

const eventBody = z
  .object({
    id: z.string().min(1),
    type: z.enum(["job.completed", "job.failed", "budget.alert"]),
    organization_id: z.string().min(1),
    /** Where the event belongs: a webhook made with an API key receives only its key's environment's events. */
    project_id: z.string().nullable().default(null),
    environment_id: z.string().nullable().default(null),
    created_at: z.string(),
    data: z.record(z.string(), z.unknown()),
  })
  .strict();

const config = loadConfig();
const log = createLogger(config.logLevel, { replica: config.replica });
const troupe = await startTroupe(config, log, {
  extraRoutes: (services) => [
    defineRoute({
      method: "post",
      path: publishPath,
      summary: "test only: publish an organization event",
      tag: "test",
      auth: "none",
      body: eventBody,
      responses: { 202: null },
      handler: async (ctx) => {
        // Carried as sent: the delivery path passes any `data` through, and the bench and tests send small
        // stand-ins; the emitters' real payloads are type-checked against actors/webhooks/events.ts.
        await services.publisher.publish(ctx.body as OrganizationEvent);
        return json(202);
      },
    }),
  ],
});
process.stdout.write(`Troupe (${config.mode}) listening on ${troupe.url} PORT=${troupe.port}\n`);
const stop = (): void => {
  troupe.stop().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
