// Live events of one job over a WebSocket at /v1/jobs/{id}/events (API key
// with scope `video`, in the Authorization header or as the subprotocols
// `["troupe.v1", "bearer.<key>"]`, like the conversation events). The first
// frame is the job as it is (`{type: "job", job}`); then one
// `{type: "job.updated", job_id, job}` frame per status or progress change.
// Events come from the process-wide bus (Redis pub/sub in the cluster), so a
// socket on any replica sees the job wherever its actor runs. The socket is
// closed (1000) once the job is final.
import type { TemplatedApp, WebSocket } from "uWebSockets.js";
import { TroupeError } from "../core/errors.ts";
import type { JobDirectory } from "../actors/job/directory.ts";
import type { JobEvent, JobEventBus } from "../actors/job/events.ts";
import { isFinal, type Job } from "../actors/job/types.ts";
import type { KeyRevocations } from "../tenancy/key-revocations.ts";
import { defineWsRoute } from "./route.ts";
import { jobIdParam } from "./routes/jobs.ts";
import { attachWsRoute, type WsRouteDeps } from "./ws-route.ts";

interface SocketData {
  jobId: string;
  snapshot: Job;
  keyId: string;
  unwatch?: () => void;
  closed?: boolean;
}

export type JobEventsRoute = ReturnType<typeof jobEventsRoute>;

export interface JobEventsDeps extends WsRouteDeps {
  route: JobEventsRoute;
  events: JobEventBus;
  revocations: KeyRevocations;
}

export function jobEventsRoute(deps: { directory: JobDirectory }) {
  return defineWsRoute({
    kind: "ws",
    path: "/v1/jobs/:id/events",
    summary: "WebSocket: live status and progress of a job (upgrade; first frame is the job, then one frame per change)",
    tag: "video",
    auth: "api_key",
    scope: "video",
    errors: ["not_found"],
    subprotocol: "troupe.v1",
    accept: async (ctx): Promise<SocketData> => {
      const id = jobIdParam(ctx.params.id);
      const snapshot = await deps.directory.get(ctx.auth.key.organization_id, id);
      if (!snapshot) throw new TroupeError("not_found", "job not found");
      return { jobId: id, snapshot, keyId: ctx.auth.key.id };
    },
  });
}

export async function attachJobEvents(app: TemplatedApp, deps: JobEventsDeps): Promise<void> {
  const sockets = new Map<string, Set<WebSocket<SocketData>>>();
  await deps.events.subscribe((event: JobEvent, json: string) => {
    const listeners = sockets.get(event.job_id);
    if (!listeners) return;
    // From the bus, outside any uWS callback: corked, or the frame waits for other traffic.
    for (const ws of listeners) {
      ws.cork(() => ws.send(json, false));
      if (isFinal(event.job.status)) ws.end(1000, "the job is finished");
    }
  }, () => sockets.size > 0);

  attachWsRoute(app, deps.route, {
    idleTimeout: 120,
    sendPingsAutomatically: true,
    maxPayloadLength: 4 * 1024,
    maxBackpressure: 1024 * 1024,
    open: (ws) => {
      const data = ws.getUserData();
      let set = sockets.get(data.jobId);
      if (!set) sockets.set(data.jobId, (set = new Set()));
      set.add(ws);
      data.unwatch = deps.revocations.watch(data.keyId, () => ws.end(4401, "the API key was revoked"));
      // Sent after the upgrade's cork, as the conversation events do (gateway/conversation-events-ws.ts).
      queueMicrotask(() => {
        if (data.closed) return;
        ws.cork(() => ws.send(JSON.stringify({ type: "job", job_id: data.jobId, job: data.snapshot }), false));
        if (isFinal(data.snapshot.status)) ws.end(1000, "the job is finished");
      });
    },
    message: () => {
      // One-way stream; client frames are ignored.
    },
    close: (ws) => {
      const data = ws.getUserData();
      data.closed = true;
      data.unwatch?.();
      const set = sockets.get(data.jobId);
      set?.delete(ws);
      if (set && set.size === 0) sockets.delete(data.jobId);
    },
  }, deps);
}
