// Batches (docs/api/batches.md): a BatchActor per batch, this process's
// BatchRunner, the OpenAI Files and Batch APIs and Anthropic's Message
// Batches. Each line runs through the mount's own route in process
// (batches-line.ts), so it is translated, routed, reserved and billed as the
// HTTP call would be.
import { monitorEventLoopDelay } from "node:perf_hooks";
import { z } from "zod";
import { eraseDefinition } from "../../actors/actor.ts";
import { createBatchActor } from "../../actors/batch/batch-actor.ts";
import { BatchDirectory } from "../../actors/batch/batch-directory.ts";
import { BatchFiles } from "../../actors/batch/batch-files.ts";
import { BatchRunner, type LineOutcome } from "../../actors/batch/batch-runner.ts";
import { storeBatchEventBus, throttledProgress } from "../../actors/batch/events.ts";
import { toOpenAiBatch, type BatchData } from "../../actors/batch/types.ts";
import { callActor } from "../../actors/host.ts";
import type { EventPublisher } from "../../core/organization-events.ts";
import { attachBatchEvents, batchEventsRoute } from "../batch-events-ws.ts";
import { anthropicBatchRoutes, anthropicResultLine } from "../compat/anthropic/batches-route.ts";
import { anthropicRoutes } from "../compat/anthropic/routes.ts";
import { openAiBatchRoutes, type BatchRouteDeps } from "../compat/openai/batches-route.ts";
import { openAiOutputLine, runRouteLine } from "../compat/openai/batches-line.ts";
import { openAiChatRoutes } from "../compat/openai/chat-route.ts";
import { openAiEmbeddingRoutes } from "../compat/openai/embeddings-route.ts";
import { openAiFileRoutes } from "../compat/openai/files-route.ts";
import type { RouteDefinition } from "../route.ts";
import type { BillingFeature } from "./billing.ts";
import type { Feature } from "./feature.ts";
import type { SharedServices } from "./shared-services.ts";

export interface BatchesFeature extends Feature {
  /** Organization deletion: every batch of the organization, its answers and its files. */
  eraseOrganization(organizationId: string): Promise<void>;
}

/** 250 ms: a progress bar's pace; a 50,000-line batch publishes at most 4 frames a second, not one per line. */
const progressEveryMs = 250;

const openAiLine = z.object({ custom_id: z.string(), body: z.unknown() });
const anthropicLine = z.object({ custom_id: z.string(), params: z.unknown() });

/**
 * True while the event loop's delay over the last 250 ms is above `lagMs`:
 * interactive requests are waiting for the process, so no batch line starts.
 */
function eventLoopBusy(lagMs: number): { busy(): boolean; stop(): void } {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  let busy = false;
  const timer = setInterval(() => {
    busy = histogram.percentile(99) / 1e6 > lagMs;
    histogram.reset();
  }, 250);
  timer.unref();
  return { busy: () => busy, stop: () => (clearInterval(timer), histogram.disable()) };
}

/** `responseRoutes`: the Responses API's routes (the responses feature's), whose create runs `/v1/responses` lines. */
export function batchesFeature(s: SharedServices, billing: BillingFeature, publisher: EventPublisher, responseRoutes: readonly RouteDefinition[]): BatchesFeature {
  const { actors, config, log } = s;
  const settings = config.batches;
  const files = new BatchFiles(s.store, () => s.clock.now());
  const directory = new BatchDirectory(s.store);
  const ai = { router: s.router, usage: billing.meter, billing: billing.billing };
  // The mounts' own routes, built once more for in-process lines (the same definitions the gateway serves).
  const find = (routes: readonly RouteDefinition[], path: string): RouteDefinition => routes.find((r) => r.method === "post" && r.path === path)!;
  const endpoints: Record<BatchData["endpoint"], RouteDefinition> = {
    "/v1/chat/completions": find(openAiChatRoutes({ ...ai, now: () => s.clock.now() }), "/openai/v1/chat/completions"),
    "/v1/embeddings": find(openAiEmbeddingRoutes(ai), "/openai/v1/embeddings"),
    "/v1/responses": find(responseRoutes, "/openai/v1/responses"),
    "/v1/messages": find(anthropicRoutes(ai), "/anthropic/v1/messages"),
  };
  const loop = eventLoopBusy(settings.yieldLagMs);
  const keyLimits = s.apiKeys.batchLimits();

  const runLine = async (batch: BatchData, index: number, text: string): Promise<LineOutcome> => {
    const parsed = (batch.api === "openai" ? openAiLine : anthropicLine).safeParse(JSON.parse(text));
    const customId = parsed.success ? parsed.data.custom_id : `line-${index + 1}`;
    const body = parsed.success ? ("body" in parsed.data ? parsed.data.body : "params" in parsed.data ? parsed.data.params : undefined) : undefined;
    const outcome = await runRouteLine(endpoints[batch.endpoint], batch, index, body, Buffer.byteLength(text), keyLimits);
    if (outcome.kind !== "answer") return outcome;
    const line = batch.api === "openai" ? openAiOutputLine(batch, index, customId, outcome.answer) : anthropicResultLine(customId, outcome.answer);
    return { kind: "answered", custom_id: customId, ...line };
  };

  let runner: BatchRunner | undefined;
  const events = storeBatchEventBus(s.store, (error) => log.warn("batch progress event failed", { error }));
  const progress = throttledProgress((b) => events.publish({ type: "batch.progress", batch_id: b.id, status: b.status, request_counts: b.request_counts, batch: b }), progressEveryMs, () => s.clock.now());
  const batch = createBatchActor({ kick: (id) => runner?.kick(id), progress: (b) => progress(toOpenAiBatch(b)), publisher, watchdogMs: settings.watchdogMs });
  runner = new BatchRunner({
    host: actors,
    batch,
    files,
    runLine,
    outputs: async (b, results) => {
      if (b.api === "openai") {
        const answered = results.flatMap((r) => (r ? [r] : []));
        return { output: answered.filter((r) => r.ok).map((r) => r.text), errors: answered.filter((r) => !r.ok).map((r) => r.text) };
      }
      // Anthropic: one result per request, in order; those never run are canceled or expired.
      const never = b.status === "expired" ? "expired" : "canceled";
      const output: string[] = [];
      for (const [i, r] of results.entries()) {
        if (r) output.push(r.text);
        else output.push(anthropicResultLine(anthropicLine.safeParse(JSON.parse((await files.line(b.input_file_id, i)) ?? "{}")).data?.custom_id ?? `line-${i + 1}`, never).text);
      }
      return { output, errors: [] };
    },
    concurrency: settings.concurrency,
    busy: loop.busy,
    log,
  });
  const running = runner;
  const routeDeps: BatchRouteDeps = { host: actors, batch, files, directory, now: () => s.clock.now() };
  const eventsRoute = batchEventsRoute(routeDeps);
  return {
    actors: [eraseDefinition(batch)],
    routes: [
      ...openAiFileRoutes({ files, maxFileBytes: Math.min(settings.maxFileBytes, config.maxBodyBytes), maxLines: settings.maxLines }),
      ...openAiBatchRoutes(routeDeps),
      ...anthropicBatchRoutes({ ...routeDeps, baseUrl: () => s.publicUrl.base, maxLines: settings.maxLines }),
    ],
    sockets: [{ route: eventsRoute, attach: (app, deps) => attachBatchEvents(app, { ...deps, route: eventsRoute, events }) }],
    drain: () => running.stop(),
    stop: () => loop.stop(),
    eraseOrganization: async (organizationId) => {
      for (;;) {
        const ids = await directory.ofOrganization(organizationId);
        if (ids.length === 0) break;
        for (const id of ids) {
          const { total, environment_id } = await callActor(actors, batch, id, "erase", {});
          await files.eraseBatch(id, total);
          await directory.remove({ organization_id: organizationId, environment_id: environment_id ?? "" }, id);
        }
      }
      await files.deleteOrganization(organizationId);
    },
  };
}
