// Composition root: builds the stores and services from the config, the
// route list, and the gateway. `startTroupe` is what `npm start`, the
// cluster replicas and the end-to-end tests all run.
// First: uWS reads its settings from the environment when it loads.
import "./uws-settings.ts";
import { join } from "node:path";
import { systemClock, type Clock } from "../core/clock.ts";
import type { Config } from "../core/config.ts";
import type { Logger } from "../core/log.ts";
import { createConversationActor, type ConversationActorDefinition } from "../actors/conversation/conversation-actor.ts";
import { ConversationDirectory } from "../actors/conversation/directory.ts";
import { storeConversationEventBus, type ConversationEventBus } from "../actors/conversation/events.ts";
import { eraseDefinition } from "../actors/actor.ts";
import type { ActorHost } from "../actors/host.ts";
import { createActorHost } from "../actors/hosts/create-host.ts";
import { createRouter, type Router } from "../providers/index.ts";
import { UsageMeter, type UsageSink } from "../providers/usage.ts";
import { createVectorIndex } from "../vectors/create-vector-index.ts";
import { OrgIndex, type Embedder } from "../vectors/org-index.ts";
import type { VectorIndex } from "../vectors/vector-index.ts";
import { UsageRecorder, type WriteUsage } from "../tenancy/usage-recorder.ts";
import { readJournal, UsageJournal } from "../tenancy/usage-journal.ts";
import { AccountService } from "../tenancy/accounts.ts";
import { ApiKeyService } from "../tenancy/api-keys.ts";
import { EmbeddedDataStore } from "../tenancy/embedded-data-store.ts";
import type { DataStore } from "../tenancy/data-store.ts";
import { createAdmission } from "./admission.ts";
import { createAuthenticator } from "./authenticate.ts";
import type { RouteDefinition } from "./route.ts";
import { accountRoutes } from "./routes/account.ts";
import { apiKeyRoutes } from "./routes/api-keys.ts";
import { authRoutes } from "./routes/auth.ts";
import { agentRoutes } from "./routes/agents.ts";
import { chatRoutes } from "./routes/chat.ts";
import { embeddingRoutes } from "./routes/embeddings.ts";
import { modelRoutes } from "./routes/models.ts";
import { translationRoutes } from "./routes/translations.ts";
import { vectorIndexRoutes } from "./routes/vector-index.ts";
import { visionRoutes } from "./routes/vision.ts";
import { attachConversationEvents, conversationEventsRoute } from "./conversation-events-ws.ts";
import { createGateway, type Gateway } from "./server.ts";
import { createFileStore } from "../media/create-file-store.ts";
import type { FileStore } from "../media/file-store.ts";
import { attachFiles, filesRawPath } from "./routes/files.ts";
import { OutboundFetcher } from "../media/outbound-fetch.ts";
import type { MediaDeps } from "../media/rehost.ts";
import { audioRoutes } from "./routes/audio.ts";
import { imageRoutes } from "./routes/images.ts";
import { createJobActor, type JobActorDefinition } from "../actors/job/job-actor.ts";
import { JobDirectory } from "../actors/job/directory.ts";
import { storeJobEventBus, type JobEventBus } from "../actors/job/events.ts";
import { narrator } from "../actors/job/narration.ts";
import { createLimiter } from "../actors/job/compose-limit.ts";
import { concatClips, extractLastFrame, muxVoiceover } from "../media/video-compose.ts";
import { videoNeed } from "../providers/video-routing.ts";
import { DeferredPublisher, type EventPublisher } from "../core/organization-events.ts";
import type { UsageRecord } from "../providers/usage.ts";
import { jobRoutes } from "./routes/jobs.ts";
import { attachJobEvents, jobEventsRoute } from "./job-events-ws.ts";
// Webhooks: the WebhookActor, its directory and the EventPublisher emitters use.
import { createWebhookActor, type WebhookActorDefinition } from "../actors/webhooks/webhook-actor.ts";
import { createSecretBox, webhookSecretKey } from "../actors/webhooks/secret-box.ts";
import { WebhookDirectory } from "../actors/webhooks/directory.ts";
import { DeliveryLog } from "../actors/webhooks/delivery-log.ts";
import { WebhookPublisher } from "../actors/webhooks/publisher.ts";
import { WebhookDispatcher } from "../actors/webhooks/dispatcher.ts";
import { callActor } from "../actors/host.ts";
import { webhookRoutes } from "./routes/webhooks.ts";
import type { Metrics } from "../core/metrics.ts";
import type { Tracing } from "../core/tracing.ts";
import { attemptObserver, createMetrics, createTracing, meteredUsage } from "./observability.ts";
import { prepareDataDir } from "./data-dir.ts";
import { startMetricsServer, type MetricsServer } from "./metrics-server.ts";
import { docsPages } from "./docs-page.ts";
import { consolePages } from "./console/console-routes.ts";
import type { ConsoleSources } from "./console/console-data.ts";
import { readSnapshots, SnapshotPublisher, takeSnapshot } from "./console/replica-snapshots.ts";
import { budgetsFromLedger, usageTodayFromLedger } from "./console/usage-today.ts";
import { jobsInFlight } from "./console/jobs-in-flight.ts";
import { webhookFailures } from "./console/webhook-failures.ts";
// Billing (issue 14): ledger, budgets, usage API.
import { Billing } from "../tenancy/billing.ts";
import { createLedgerStore } from "../tenancy/create-ledger-store.ts";
import { redisTarget } from "../tenancy/redis-target.ts";
import type { LedgerStore } from "../tenancy/ledger.ts";
import { UsageReports } from "../tenancy/usage-report.ts";
import { billingRoutes } from "./routes/billing.ts";
import { anthropicRoutes } from "./compat/anthropic/routes.ts";
import { openAiCompatRoutes } from "./compat/openai/routes.ts";

export interface TroupeServices {
  config: Config;
  log: Logger;
  clock: Clock;
  store: DataStore;
  accounts: AccountService;
  apiKeys: ApiKeyService;
  router: Router;
  usage: UsageSink;
  vectors: VectorIndex;
  orgIndex: OrgIndex;
  actors: ActorHost;
  conversation: ConversationActorDefinition;
  directory: ConversationDirectory;
  events: ConversationEventBus;
  files: FileStore;
  media: MediaDeps;
  job: JobActorDefinition;
  jobDirectory: JobDirectory;
  jobEvents: JobEventBus;
  /** Where job and budget events go: the organization's subscribed webhooks. */
  publisher: EventPublisher;
  webhook: WebhookActorDefinition;
  /** Prometheus series (no-op when METRICS_PORT is unset): jobs and webhooks report through it. */
  metrics: Metrics;
  /** OpenTelemetry spans (no-op when OTEL_EXPORTER_OTLP_ENDPOINT is unset). */
  tracing: Tracing;
  billing: Billing;
}

export interface StartOptions {
  clock?: Clock;
  /** A router built by the caller (tests point providers at fakes with short backoffs). */
  router?: Router;
  /** Where usage records go (tests collect them); default: the durable recorder. */
  usage?: UsageSink;
  /** false: the recorder keeps records in memory only until the ledger has them (bench:chat --no-journal shows the journal's cost). */
  usageJournal?: boolean;
  /** The console's per-organization sections (jobs, webhooks, budgets; usage defaults to the stored records). */
  consoleSources?: ConsoleSources;
  /** Where budget.alert events go (the webhooks' publisher); default: nowhere. */
  events?: EventPublisher;
  /** Extra routes (tests register probes for the auth pipeline this way). */
  extraRoutes?: (services: TroupeServices) => RouteDefinition[];
  /** Where job.completed/job.failed go (the webhooks); default: nowhere. */
  publisher?: EventPublisher;
  /** How a job segment is billed (awaited, idempotent on request_id); default: the usage sink. */
  bill?: (record: UsageRecord) => Promise<void>;
  /** The usage ledger; default: Redis with REDIS_URL, else lmdb on its own thread (bench:chat compares it on the event loop). */
  ledger?: LedgerStore;
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

/** The Redis store (ioredis) is imported only when REDIS_URL or REDIS_CLUSTER_NODES is set: the embedded start must not pay for it. */
export async function createDataStore(config: Config, clock: Clock): Promise<DataStore> {
  const redis = redisTarget(config);
  if (redis) {
    const { RedisDataStore } = await import("../tenancy/redis-data-store.ts");
    return new RedisDataStore(redis);
  }
  return new EmbeddedDataStore(config.dataDir, clock);
}

/**
 * The usage recorder with its journal under <data dir>/usage-journal: each
 * record is on file before its call is answered, and what a crashed run
 * left there goes to the ledger with the first batch.
 */
function journaledRecorder(dataDir: string, write: WriteUsage, log: Logger): UsageRecorder {
  const dir = join(dataDir, "usage-journal");
  const leftover = readJournal(dir, log);
  const recorder = new UsageRecorder(write, log, { journal: new UsageJournal(dir, log, leftover.segments) });
  if (leftover.records.length > 0) {
    log.info("usage journal: records of an earlier run go to the ledger", { records: leftover.records.length, segments: leftover.segments.length });
    recorder.recover(leftover.records);
  }
  return recorder;
}

export async function startTroupe(config: Config, log: Logger, options: StartOptions = {}): Promise<RunningTroupe> {
  prepareDataDir(config.dataDir, log);
  const clock = options.clock ?? systemClock;
  const metrics = await createMetrics(config.observability, config.replica);
  const tracing = await createTracing(config.observability, config.replica, log);
  const store = await createDataStore(config, clock);
  const apiKeys = new ApiKeyService(store, config.tenancy, clock, log);
  await apiKeys.start();
  const accounts = new AccountService(store, config.tenancy, clock, apiKeys);
  const router = options.router ?? createRouter(config.providers);
  const observer = attemptObserver(metrics, tracing);
  if (observer) router.observeAttempts(observer);
  const ledger = options.ledger ?? (await createLedgerStore(config));
  // Emitters (budgets, jobs) are built before the webhook publisher, which needs the actor host they
  // register on: they publish through this, connected to the publisher once it exists.
  const deferredPublisher = new DeferredPublisher();
  const billing = new Billing({ ledger, store, clock, log, events: options.events ?? deferredPublisher });
  await billing.start();
  const recorder = options.usage ? undefined : options.usageJournal === false ? new UsageRecorder(billing.write, log) : journaledRecorder(config.dataDir, billing.write, log);
  const recorded: UsageSink = options.usage ?? (recorder as UsageRecorder);
  // Every record also counts into its key's tokens-per-minute window.
  const usage: UsageSink = meteredUsage({ record: (u) => (recorded.record(u), apiKeys.limits.record(u)) }, metrics);

  const indexModel = router.catalogue.get(config.vectors.indexModel);
  const dimensions = indexModel?.capabilities.dimensions;
  if (!indexModel || indexModel.category !== "embedding" || !dimensions) {
    throw new Error(`EMBEDDING_INDEX_MODEL ${config.vectors.indexModel} is not an embedding model with known dimensions in the catalogue`);
  }
  const vectors = await createVectorIndex(config.vectors, { dataDir: config.dataDir, dimensions, logger: log });
  await vectors.open();
  const embed: Embedder = async (texts, purpose, signal, onUsage) => {
    const result = await router.embed(
      { model: config.vectors.indexModel, routing_strategy: "manual", input: texts, input_type: purpose === "query" ? "search_query" : "search_document" },
      { signal },
    );
    onUsage?.(result);
    return result.embeddings;
  };
  const orgIndex = new OrgIndex(vectors, embed, clock);

  const directory = new ConversationDirectory(store, (error) => log.warn("conversation summary write failed", { error }));
  const events = storeConversationEventBus(store, (error) => log.warn("conversation event failed", { error }));
  const meter = new UsageMeter(router.catalogue, usage, () => clock.now());
  const conversation = createConversationActor({
    chat: (request, signal) => router.chat(request, { signal }),
    recordUsage: (payer, requestId, category, figures, call) => meter.record({ ...payer, request_id: requestId, call }, category, figures),
    memory: orgIndex,
    directory,
    events,
    conversationMaxBytes: config.agents.conversationMaxBytes,
  });
  const files = await createFileStore(config.media, config.dataDir);
  const fetcher = new OutboundFetcher({ allowHosts: config.outboundAllowHosts, maxBytes: config.media.maxDownloadBytes, timeoutMs: config.media.downloadTimeoutMs });
  // File URLs use PUBLIC_URL, else the listen address (known once listening; no request runs before that).
  let publicBase = config.publicUrl?.replace(/\/$/, "") ?? "";
  const media: MediaDeps = { files, fetcher, fileUrl: (id) => `${publicBase}/v1/files/${id}` };

  // Steps re-armed at start wait until the gateway listens (result URLs need the listen address).
  let listening!: () => void;
  const listeningPromise = new Promise<void>((resolve) => (listening = resolve));
  // Video jobs: JobActors billed per segment through `bill`, announcing their end through `publisher`.
  const jobDirectory = new JobDirectory(store);
  const jobEvents = storeJobEventBus(store, (error) => log.warn("job event failed", { error }));
  const job = createJobActor({
    video: router,
    plan: (model, strategy, withImage) => {
      const [first] = router.plan(model, strategy, videoNeed(withImage));
      return { model: first!.id, provider: first!.provider };
    },
    narrate: narrator(router, config.jobs),
    compose: { concatClips, muxVoiceover, extractLastFrame },
    // Embedded only: under Dapr a turn queued here delays daprd's rebalancing (it waits for in-flight turns).
    ...(config.mode === "embedded" ? { composeSlots: createLimiter() } : {}),
    media,
    catalogue: router.catalogue,
    // A test's usage collector sees job records too; otherwise they are written durably and idempotently.
    bill: options.bill ?? (options.usage ? async (record) => usage.record(record) : (record) => billing.bill(record)),
    log,
    now: () => clock.now(),
    directory: jobDirectory,
    events: jobEvents,
    publisher: options.publisher ?? deferredPublisher,
    watchdogMs: config.jobs.watchdogMs,
    whenReady: () => listeningPromise,
    metrics,
  });

  // Webhooks: a WebhookActor per webhook; attempts leave outside the actor turn (the dispatcher) and are settled back.
  const webhookDirectory = new WebhookDirectory(store);
  await webhookDirectory.start();
  const dispatcher = new WebhookDispatcher({ post: (url, body, headers, timeoutMs) => fetcher.post(url, body, headers, timeoutMs), timeoutMs: config.webhooks.timeoutMs, log, metrics });
  const secrets = createSecretBox(webhookSecretKey(config.webhooks.secretKey, config.dataDir));
  const webhook = createWebhookActor({ dispatch: (id, attempts) => dispatcher.dispatch(id, attempts), directory: webhookDirectory, log: new DeliveryLog(store), config: config.webhooks, secrets });

  const actors = await createActorHost({ mode: config.mode, dataDir: config.dataDir, actors: config.actors, clock, log, tracing });
  actors.register([eraseDefinition(conversation), eraseDefinition(job), eraseDefinition(webhook)]);
  const webhookPublisher = new WebhookPublisher({ actors, actor: webhook, directory: webhookDirectory });
  // Tests may collect events instead of delivering them.
  const publisher: EventPublisher = options.publisher ?? webhookPublisher;
  deferredPublisher.connect(webhookPublisher);
  await actors.start();
  metrics.addSources({ breakers: () => router.breakerStates(), activeActors: () => actors.runtimeActiveActors() });
  // Results ride in the webhook's next accept when one is on its way (one turn instead of two), else settle alone.
  dispatcher.attach((id, results) => webhookPublisher.report(id, results));

  const services: TroupeServices = {
    ...{ config, log, clock, store, accounts, apiKeys, router, usage, vectors, orgIndex, actors, conversation, directory, events, files, media },
    ...{ job, jobDirectory, jobEvents },
    ...{ publisher, webhook },
    ...{ metrics, tracing },
    billing,
  };
  const ai = { router, usage: meter, billing };
  const jobDeps = { actors, job, directory: jobDirectory, router, media, billing };
  const builtIn: RouteDefinition[] = [
    ...authRoutes(accounts, config.tenancy),
    ...accountRoutes(accounts, (ids) => ledger.usageToDate(ids)),
    ...apiKeyRoutes(apiKeys, (ids) => ledger.usageToDate(ids)),
    ...modelRoutes(ai),
    ...chatRoutes(ai),
    ...anthropicRoutes(ai),
    ...embeddingRoutes(ai),
    ...vectorIndexRoutes({ index: orgIndex, usage: meter }),
    ...visionRoutes(ai),
    ...translationRoutes(ai),
    ...audioRoutes({ ...ai, media }),
    ...imageRoutes({ ...ai, media }),
    ...agentRoutes({ actors, conversation, directory, router, billing, limits: config.agents }),
    ...jobRoutes(jobDeps),
    ...webhookRoutes({ actors, webhook, directory: webhookDirectory, accounts, fetcher, clock, timeoutMs: config.webhooks.timeoutMs }),
    ...billingRoutes(new UsageReports(accounts.orgs, billing, clock)),
    ...openAiCompatRoutes({ ...ai, media, now: () => clock.now(), jobs: jobDeps }),
  ];
  // A test's extra route replaces a built-in with the same method and path.
  const extra = options.extraRoutes?.(services) ?? [];
  const overridden = new Set(extra.map((r) => `${r.method} ${r.path}`));
  const routes = [...builtIn.filter((r) => !overridden.has(`${r.method} ${r.path}`)), ...extra];

  const authenticator = createAuthenticator(accounts, apiKeys, config.tenancy.apiKeyPrefix);
  const admission = createAdmission(authenticator, apiKeys);
  // The console: each replica publishes what only it sees (its daprd's actors, its breakers).
  const snapshotSources = {
    replica: config.replica,
    mode: config.mode,
    activeActors: () => actors.runtimeActiveActors(),
    breakers: () => router.breakerStates(),
  };
  const snapshots = new SnapshotPublisher(store, snapshotSources, clock, config.observability.consoleSnapshotIntervalMs, log);
  snapshots.start();
  const consoleSources: ConsoleSources = {
    usageToday: (_orgId, projects) => usageTodayFromLedger(ledger, projects, clock.now()),
    budgets: (_orgId, projects) => budgetsFromLedger(ledger, projects, clock.now()),
    jobsInFlight: (orgId) => jobsInFlight(jobDirectory, orgId),
    webhookFailures: (orgId) => webhookFailures({ actors, webhook, directory: webhookDirectory }, orgId),
    ...options.consoleSources,
  };
  const pages = [
    ...docsPages(),
    ...consolePages(authenticator, {
      accounts,
      sources: consoleSources,
      replica: config.replica,
      now: () => clock.now(),
      // The serving replica's own row is taken now; the others come from the store.
      snapshots: async () => {
        const [own, all] = await Promise.all([takeSnapshot(snapshotSources, clock), readSnapshots(store)]);
        return [...all.filter((s) => s.replica !== own.replica), own].sort((a, b) => a.replica.localeCompare(b.replica, "en", { numeric: true }));
      },
    }),
  ];
  const eventsRoute = conversationEventsRoute({ actors, conversation });
  const jobEventsWs = jobEventsRoute({ actors, job, directory: jobDirectory });
  const gateway = createGateway({
    routes,
    wsRoutes: [eventsRoute, jobEventsWs],
    admission,
    log,
    maxBodyBytes: config.maxBodyBytes,
    secureCookies: config.publicUrl?.startsWith("https://") ?? false,
    ready: async () => {
      await store.lookup("readiness-probe");
      return actors.ready();
    },
    openApiInfo: { title: "Troupe", version: "1.0.0" },
    rawPaths: [filesRawPath],
    metrics,
    tracing,
    pages,
  });
  await attachConversationEvents(gateway.app, { route: eventsRoute, admission, events, log, revocations: services.apiKeys.revocations, metrics });
  await attachJobEvents(gateway.app, { route: jobEventsWs, admission, events: jobEvents, log, revocations: services.apiKeys.revocations, metrics });
  attachFiles(gateway.app, files, log);
  const port = await gateway.listen(config.host, config.port);
  const shownHost = config.host === "0.0.0.0" || config.host === "::" ? "localhost" : config.host;
  const url = config.publicUrl ?? `http://${shownHost}:${port}`;
  publicBase = url.replace(/\/$/, "");
  listening();
  let metricsServer: MetricsServer | undefined;
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      await gateway.shutdown(config.shutdownGraceMs);
      await webhookPublisher.idle();
      await dispatcher.idle();
      fetcher.close();
      metricsServer?.close();
      await snapshots.stop();
      await actors.stop();
      await directory.flush();
      await recorder?.close();
      billing.stop();
      await ledger.close();
      await router.close();
      await vectors.close();
      apiKeys.stop();
      await files.close();
      await store.close();
      await tracing.shutdown();
    })());
  if (config.observability.metrics) {
    const { host, port: metricsPort } = config.observability.metrics;
    // A metrics port in use fails the start; what already started is stopped, not left serving half a Troupe.
    metricsServer = await startMetricsServer(metrics, host, metricsPort, log).catch(async (error: unknown) => {
      await stop();
      throw error;
    });
  }
  return { services, routes, gateway, port, url, metricsPort: metricsServer?.port, stop };
}
