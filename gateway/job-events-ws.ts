// Live events of one job over a WebSocket at /v1/jobs/{id}/events (API key
// with scope `video`, in the Authorization header or as the subprotocols
// `["troupe.v1", "bearer.<key>"]`, like the conversation events). The first
// frame is the job as it is (`{type: "job", job}`); then one
// `{type: "job.updated", job_id, job}` frame per status or progress change.
// Served by the shared event stream (gateway/event-stream-ws.ts); an update
// older than the first frame (by updated_at) is not sent. The socket
// is closed (1000) once the job is final. Another environment's job is 404,
// as on GET /v1/jobs/{id}.
import type { TemplatedApp } from "uWebSockets.js";
import { TroupeError } from "../core/errors.ts";
import type { JobDirectory } from "../actors/job/directory.ts";
import type { ActorHost } from "../actors/host.ts";
import type { JobActorDefinition } from "../actors/job/job-actor.ts";
import type { JobEvent } from "../actors/job/events.ts";
import { isFinal, type Job } from "../actors/job/types.ts";
import { attachEventStream, type EventStreamDeps, type EventStreamTarget } from "./event-stream-ws.ts";
import { defineWsRoute } from "./route.ts";
import { jobForKey, jobIdParam } from "./routes/jobs.ts";

export type JobEventsRoute = ReturnType<typeof jobEventsRoute>;

export interface JobEventsDeps extends EventStreamDeps<JobEvent> {
  route: JobEventsRoute;
}

export function jobEventsRoute(deps: { actors: ActorHost; job: JobActorDefinition; directory: JobDirectory }) {
  return defineWsRoute({
    kind: "ws",
    path: "/v1/jobs/:id/events",
    summary: "WebSocket: live status and progress of a job (upgrade; first frame is the job, then one frame per change)",
    tag: "video",
    auth: "api_key",
    scope: "video",
    errors: ["not_found"],
    subprotocol: "troupe.v1",
    accept: async (ctx): Promise<EventStreamTarget<Job>> => {
      const id = jobIdParam(ctx.params.id);
      const read = async (): Promise<Job> => {
        const job = await jobForKey(deps, ctx.auth.key, id);
        if (!job) throw new TroupeError("not_found", "job not found");
        return job;
      };
      return { id, keyId: ctx.auth.key.id, read };
    },
  });
}

export function attachJobEvents(app: TemplatedApp, deps: JobEventsDeps): void {
  attachEventStream(app, deps.route, {
    firstFrame: (id, job) => ({ type: "job", job_id: id, job }),
    // Read after subscribing, the first frame can be newer than an update still in flight: an older one is not sent.
    alreadyShown: (job) => (event: JobEvent) => event.job.updated_at < job.updated_at,
    finish: {
      reason: "the job is finished",
      afterSnapshot: (job) => isFinal(job.status),
      afterEvent: (event) => isFinal(event.job.status),
    },
  }, deps);
}
