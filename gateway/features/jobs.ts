// Video jobs: a JobActor per job (plan, generate, poll, compose, narrate,
// bill per segment), its directory and event bus, the /v1/jobs and
// /v1/video routes and the job events WebSocket.
import { eraseDefinition } from "../../actors/actor.ts";
import type { EventPublisher } from "../../core/organization-events.ts";
import { createLimiter } from "../../actors/job/compose-limit.ts";
import { JobDirectory } from "../../actors/job/directory.ts";
import { storeJobEventBus } from "../../actors/job/events.ts";
import { createJobActor, type JobActorDefinition } from "../../actors/job/job-actor.ts";
import { jobPartsNanos } from "../../actors/job/job-budget.ts";
import { narrator } from "../../actors/job/narration.ts";
import { concatClips, extractLastFrame, muxVoiceover } from "../../media/video-compose.ts";
import { videoNeed } from "../../providers/video-routing.ts";
import { attachJobEvents, jobEventsRoute } from "../job-events-ws.ts";
import { jobRoutes, type JobRouteDeps } from "../routes/jobs.ts";
import type { BillingFeature } from "./billing.ts";
import type { Feature } from "./feature.ts";
import type { SharedServices } from "./shared-services.ts";

export interface JobsFeature extends Feature {
  job: JobActorDefinition;
  directory: JobDirectory;
  /** What starting, reading and deleting a job needs (/v1 and the OpenAI Videos mount). */
  routeDeps: JobRouteDeps;
}

/** `publisher`: where job.completed / job.failed go (the webhooks). `collectsUsage`: a test's usage collector sees job records too. */
export function jobsFeature(s: SharedServices, billing: BillingFeature, publisher: EventPublisher, collectsUsage: boolean): JobsFeature {
  const { actors, router, config, log, media } = s;
  const directory = new JobDirectory(s.store);
  const events = storeJobEventBus(s.store, (error) => log.warn("job event failed", { error }));
  const job = createJobActor({
    video: router,
    plan: (model, strategy, withImage) => {
      // Also where an agent's generate_video is refused without ffmpeg: it creates the job directly, not through the routes.
      media.capabilities.require("video", "video generation");
      const [first] = router.plan(model, strategy, videoNeed(withImage));
      return { model: first!.id, provider: first!.provider };
    },
    narrate: narrator(router, config.jobs),
    compose: { concatClips, muxVoiceover, extractLastFrame },
    // Embedded only: under Dapr a turn queued here delays daprd's rebalancing (it waits for in-flight turns).
    ...(config.mode === "embedded" ? { composeSlots: createLimiter() } : {}),
    media,
    catalogue: router.catalogue,
    // Otherwise segments are billed durably and idempotently (on request_id).
    bill: collectsUsage ? async (record, settles) => {
      billing.usage.record(record);
      for (const part of settles ?? []) await s.ledger.release(part);
    } : billing.billing.bill,
    // Under a hard limit (the project's, the key's) a job holds its estimated cost per part, or is refused 402.
    budget: billing.billing,
    estimate: (shape) => jobPartsNanos(router, config.jobs.narrationModel, shape),
    log,
    now: () => s.clock.now(),
    directory,
    events,
    publisher,
    watchdogMs: config.jobs.watchdogMs,
    metrics: s.metrics,
  });
  const eventsRoute = jobEventsRoute({ actors, job, directory });
  const routeDeps: JobRouteDeps = { actors, job, directory, router, media, billing: billing.billing };
  return {
    job,
    directory,
    routeDeps,
    actors: [eraseDefinition(job)],
    routes: jobRoutes(routeDeps),
    sockets: [{ route: eventsRoute, attach: (app, deps) => attachJobEvents(app, { ...deps, route: eventsRoute, events }) }],
  };
}
