// Composition root: builds the shared services and the features from the
// config, hands their routes to the gateway, listens (so the public URL is
// known), then starts the actor host and the features and opens the gateway.
// `startTroupe` is what `npm start`, the cluster replicas and the end-to-end
// tests all run. What each feature holds: gateway/features/.
// First: uWS reads its settings from the environment when it loads.
import "./uws-settings.ts";
import type { Config } from "./config.ts";
import type { Logger } from "../core/log.ts";
import type { EventPublisher } from "../core/organization-events.ts";
import { createAdmission } from "./admission.ts";
import { createAuthenticator } from "./authenticate.ts";
import { prepareDataDir } from "./data-dir.ts";
import { aiFeature } from "./features/ai.ts";
import { billingFeature, type BillingOptions } from "./features/billing.ts";
import { cacheFeature } from "./features/cache.ts";
import { consoleFeature } from "./features/console.ts";
import { batchesFeature } from "./features/batches.ts";
import { conversationsFeature } from "./features/conversations.ts";
import { dataLifecycleFeature } from "./features/data-lifecycle.ts";
import type { Feature } from "./features/feature.ts";
import { jobsFeature } from "./features/jobs.ts";
import { requestLogFeature } from "./features/request-log.ts";
import { responsesFeature } from "./features/responses.ts";
import { openAiConversationsFeature } from "./compat/openai/conversations/feature.ts";
import { closeSharedServices, createSharedServices, type SharedOverrides, type SharedServices } from "./features/shared-services.ts";
import { tenancyFeature } from "./features/tenancy.ts";
import { vectorsFeature } from "./features/vectors.ts";
import { webhooksFeature } from "./features/webhooks.ts";
import { providerCredentialsFeature } from "./features/provider-credentials.ts";
import { startMetricsServer, type MetricsServer } from "./metrics-server.ts";
import type { RouteDefinition } from "./route.ts";
import { createGateway, type Gateway } from "./server.ts";

export { createDataStore } from "./features/shared-services.ts";

/** What tests and tools reach into: the shared services and where organization events go. */
export interface TroupeServices extends SharedServices {
  publisher: EventPublisher;
}

export interface StartOptions extends SharedOverrides, BillingOptions {
  /** Where budget alerts go (tests collect them); default: the webhooks' publisher. */
  events?: EventPublisher;
  /** Extra routes (tests register probes for the auth pipeline this way); one replaces a built-in with the same method and path. */
  extraRoutes?: (services: TroupeServices) => RouteDefinition[];
}

export interface RunningTroupe {
  services: TroupeServices;
  /** Every route served (the OpenAPI test checks each is documented). */
  routes: readonly RouteDefinition[];
  gateway: Gateway;
  port: number;
  url: string;
  /** The metrics listener's port, when METRICS_PORT is set. */
  metricsPort: number | undefined;
  stop(): Promise<void>;
}

export async function startTroupe(config: Config, log: Logger, options: StartOptions = {}): Promise<RunningTroupe> {
  prepareDataDir(config.dataDir, log);
  const shared = await createSharedServices(config, log, options);
  const { actors, metrics } = shared;
  const webhooks = await webhooksFeature(shared);
  const requestLog = requestLogFeature(shared);
  const billing = await billingFeature(shared, options.events ?? webhooks.publisher, options, [requestLog.noteUsage]);
  const vectors = await vectorsFeature(shared, billing);
  const conversations = conversationsFeature(shared, billing, vectors);
  const jobs = jobsFeature(shared, billing, webhooks.publisher, options.usage !== undefined);
  const cache = await cacheFeature(shared, billing);
  const authenticator = createAuthenticator(shared.accounts, shared.apiKeys, config.tenancy.apiKeyPrefix);
  const openAiConversations = openAiConversationsFeature(shared);
  const responses = responsesFeature(shared, billing, cache, openAiConversations.responsesHook, webhooks.publisher, options.usage !== undefined);
  const batches = batchesFeature(shared, billing, webhooks.publisher, responses.routes ?? []);
  const lifecycle = dataLifecycleFeature(shared, { conversations, jobs, webhooks, vectors, responses, openAiConversations, cache, batches, requestLog });
  const features: Feature[] = [requestLog, tenancyFeature(shared, billing.billing), billing, cache, aiFeature(shared, billing, jobs, cache), responses, openAiConversations, vectors, conversations, jobs, batches, webhooks, lifecycle, providerCredentialsFeature(shared), consoleFeature(shared, authenticator, jobs, webhooks, requestLog.series)];

  const services: TroupeServices = { ...shared, publisher: webhooks.publisher };
  const extra = options.extraRoutes?.(services) ?? [];
  const overridden = new Set(extra.map((r) => `${r.method} ${r.path}`));
  const routes = [...features.flatMap((f) => f.routes ?? []).filter((r) => !overridden.has(`${r.method} ${r.path}`)), ...extra];
  const sockets = features.flatMap((f) => f.sockets ?? []);
  const admission = createAdmission(authenticator, shared.apiKeys);
  const gateway = createGateway({
    routes,
    sockets: { routes: sockets, revocations: shared.apiKeys.revocations },
    admission,
    log,
    maxBodyBytes: config.maxBodyBytes,
    secureCookies: config.publicUrl?.startsWith("https://") ?? false,
    ready: async () => (await shared.store.lookup("readiness-probe"), actors.ready()),
    unavailable: shared.capabilities.unavailable,
    openApiInfo: { title: "Troupe", version: "1.0.0" },
    rawPaths: features.flatMap((f) => f.rawPaths ?? []),
    attachRaw: features.map((f) => (app) => f.attachRaw?.(app)),
    metrics,
    tracing: shared.tracing,
    pages: features.flatMap((f) => f.pages ?? []),
    callEnded: requestLog.callEnded,
    usesCacheRequest: cache.usesCacheRequest,
  });

  // Listening first: the public URL is known before any actor or feature starts; requests wait for open() (503 until then).
  // Features stop in reverse, then the shared services close: the end of a stop, and all a failed
  // listen has to undo. A port in use fails the start here, and what the features and shared
  // services opened (the ledger's worker thread, lmdb, the vector index) is closed before the caller
  // exits. Once in CI such a start ended by a signal instead of exit code 1 while all of that was
  // still open (not reproduced in 50 runs).
  const closeOpened = async (step: (name: string) => void = () => undefined): Promise<void> => {
    for (const f of [...features].reverse()) await f.stop?.();
    step("features_stop");
    await closeSharedServices(shared);
    step("shared_services");
  };
  const port = await gateway.listen(config.host, config.port).catch(async (error: unknown) => {
    await closeOpened();
    throw error;
  });
  const url = shared.publicUrl.listening(config.host, port);
  actors.register(features.flatMap((f) => f.actors ?? []));
  await actors.start();
  for (const f of features) await f.start?.();
  gateway.open();

  let metricsServer: MetricsServer | undefined;
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      // Each step's time in the last log line: a stop that outlasts the orchestrator's grace shows where it waited.
      const steps: Record<string, number> = {};
      let stepStartMs = performance.now();
      const step = (name: string): void => {
        const nowMs = performance.now();
        steps[`${name}_ms`] = Math.round(nowMs - stepStartMs);
        stepStartMs = nowMs;
      };
      await gateway.shutdown(config.shutdownGraceMs);
      metricsServer?.close();
      step("gateway");
      for (const f of [...features].reverse()) await f.drain?.();
      step("features_drain");
      await actors.stop();
      step("actors");
      await closeOpened(step);
      log.info("stopped", steps);
    })());
  if (config.observability.metrics) {
    const { host, port: metricsPort } = config.observability.metrics;
    // A metrics port in use fails the start; what already started is stopped, not left serving half a Troupe.
    // Built last, from the finished parts it reads at scrape time (core/metrics.ts).
    const exposition = metrics.exposition({ breakers: () => shared.router.breakerStates(), deployments: () => shared.router.deploymentReadings(), activeActors: () => actors.runtimeActiveActors(), cache: cache.metricReading });
    metricsServer = await startMetricsServer(exposition, host, metricsPort, log).catch(async (error: unknown) => {
      await stop();
      throw error;
    });
  }
  return { services, routes, gateway, port, url, metricsPort: metricsServer?.port, stop };
}
