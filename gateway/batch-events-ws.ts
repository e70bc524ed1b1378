// Live progress of one batch over a WebSocket at
// /openai/v1/batches/{id}/events (any API key of the batch's environment, in
// the Authorization header or as the subprotocols `["troupe.v1",
// "bearer.<key>"]`, like the job events). The first frame is the batch as it
// is (`{type: "batch", batch_id, batch}`, OpenAI's batch object); then one
// `{type: "batch.progress", batch_id, status, request_counts, batch}` frame
// per change, at most every 250 ms per batch. The socket closes
// (1000) once the batch is final. An Anthropic batch (msgbatch_…) is served
// too, in OpenAI's shape. Another environment's batch is 404 (4404).
import type { TemplatedApp } from "uWebSockets.js";
import type { BatchProgressEvent } from "../actors/batch/events.ts";
import { settledOf } from "../actors/batch/events.ts";
import { finalStatuses, toOpenAiBatch, type OpenAiBatch } from "../actors/batch/types.ts";
import { batchFor, type BatchRouteDeps } from "./compat/openai/batches-route.ts";
import { attachEventStream, type EventStreamDeps, type EventStreamTarget } from "./event-stream-ws.ts";
import { defineWsRoute } from "./route.ts";

export type BatchEventsRoute = ReturnType<typeof batchEventsRoute>;

export function batchEventsRoute(deps: BatchRouteDeps) {
  return defineWsRoute({
    kind: "ws",
    path: "/openai/v1/batches/:batch_id/events",
    summary: "WebSocket: live status and request_counts of a batch (upgrade; first frame is the batch, then one batch.progress frame per change)",
    tag: "OpenAI-compatible",
    auth: "api_key",
    errors: ["not_found"],
    subprotocol: "troupe.v1",
    accept: async (ctx): Promise<EventStreamTarget<OpenAiBatch>> => {
      const id = ctx.params.batch_id;
      return { id, keyId: ctx.auth.key.id, read: async () => toOpenAiBatch(await batchFor(deps, ctx.auth.key, id)) };
    },
  });
}

export function attachBatchEvents(app: TemplatedApp, deps: EventStreamDeps<BatchProgressEvent> & { route: BatchEventsRoute }): void {
  attachEventStream(app, deps.route, {
    firstFrame: (id, batch) => ({ type: "batch", batch_id: id, batch }),
    // Read after subscribing, the first frame can be ahead of progress still in flight: a frame behind it is not sent.
    alreadyShown: (batch) => (event: BatchProgressEvent) => settledOf(event.batch) < settledOf(batch) || (finalStatuses.has(batch.status) && !finalStatuses.has(event.status)),
    finish: {
      reason: "the batch is finished",
      afterSnapshot: (batch) => finalStatuses.has(batch.status),
      afterEvent: (event) => finalStatuses.has(event.status),
    },
  }, deps);
}
