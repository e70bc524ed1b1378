// Composition root: builds the stores and services from the config, the
// route list, and the gateway. `startTroupe` is what `npm start`, the
// cluster replicas and the end-to-end tests all run.
// First: uWS reads its settings from the environment when it loads.
import "./uws-settings.ts";
import { mkdirSync } from "node:fs";
import { systemClock, type Clock } from "../core/clock.ts";
import type { Config } from "../core/config.ts";
import type { Logger } from "../core/log.ts";
import { createConversationActor, type ConversationActorDefinition } from "../actors/conversation/conversation-actor.ts";
import { ConversationDirectory } from "../actors/conversation/directory.ts";
import { storeEventBus, type ConversationEventBus } from "../actors/conversation/events.ts";
import { eraseDefinition } from "../actors/actor.ts";
import type { ActorHost } from "../actors/host.ts";
import { createActorHost } from "../actors/hosts/create-host.ts";
import { createRouter, type Router } from "../providers/index.ts";
import { UsageMeter, type UsageSink } from "../providers/usage.ts";
import { createVectorIndex } from "../vectors/create-vector-index.ts";
import { OrgIndex, type Embedder } from "../vectors/org-index.ts";
import type { VectorIndex } from "../vectors/vector-index.ts";
import { UsageRecorder } from "../tenancy/usage-recorder.ts";
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
// Billing (issue 14): ledger, budgets, usage API.
import type { EventPublisher } from "../core/organization-events.ts";
import { Billing } from "../tenancy/billing.ts";
import { createLedgerStore } from "../tenancy/create-ledger-store.ts";
import { UsageReports } from "../tenancy/usage-report.ts";
import { billingRoutes } from "./routes/billing.ts";

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
  billing: Billing;
}

export interface StartOptions {
  clock?: Clock;
  /** A router built by the caller (tests point providers at fakes with short backoffs). */
  router?: Router;
  /** Where usage records go (tests collect them); default: the durable recorder. */
  usage?: UsageSink;
  /** Where budget.alert events go (the webhooks' publisher); default: nowhere. */
  events?: EventPublisher;
  /** Extra routes (tests register probes for the auth pipeline this way). */
  extraRoutes?: (services: TroupeServices) => RouteDefinition[];
}

export interface RunningTroupe {
  services: TroupeServices;
  /** Every route served (the OpenAPI test checks each is documented). */
  routes: readonly RouteDefinition[];
  gateway: Gateway;
  port: number;
  url: string;
  stop(): Promise<void>;
}

/** The Redis store (ioredis) is imported only when REDIS_URL is set: the embedded start must not pay for it. */
export async function createDataStore(config: Config, clock: Clock): Promise<DataStore> {
  if (config.redisUrl) {
    const { RedisDataStore } = await import("../tenancy/redis-data-store.ts");
    return new RedisDataStore(config.redisUrl);
  }
  mkdirSync(config.dataDir, { recursive: true });
  return new EmbeddedDataStore(config.dataDir, clock);
}

export async function startTroupe(config: Config, log: Logger, options: StartOptions = {}): Promise<RunningTroupe> {
  const clock = options.clock ?? systemClock;
  const store = await createDataStore(config, clock);
  const apiKeys = new ApiKeyService(store, config.tenancy, clock, log);
  await apiKeys.start();
  const accounts = new AccountService(store, config.tenancy, clock, apiKeys);
  const router = options.router ?? createRouter(config.providers);
  const ledger = await createLedgerStore(config);
  const billing = new Billing({ ledger, store, clock, log, ...(options.events ? { events: options.events } : {}) });
  await billing.start();
  const recorder = options.usage ? undefined : new UsageRecorder(billing.write, log);
  const recorded: UsageSink = options.usage ?? (recorder as UsageRecorder);
  // Every record also counts into its key's tokens-per-minute window.
  const usage: UsageSink = { record: (u) => (recorded.record(u), apiKeys.limits.record(u)) };

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
  const events = storeEventBus(store, (error) => log.warn("conversation event failed", { error }));
  const meter = new UsageMeter(router.catalogue, usage, () => clock.now());
  const conversation = createConversationActor({
    chat: (request, signal) => router.chat(request, { signal }),
    recordUsage: (payer, requestId, category, figures, call) => meter.record({ ...payer, request_id: requestId, call }, category, figures),
    memory: orgIndex,
    directory,
    events,
  });
  const actors = await createActorHost({ mode: config.mode, dataDir: config.dataDir, actors: config.actors, clock, log });
  actors.register([eraseDefinition(conversation)]);
  await actors.start();

  const files = await createFileStore(config.media, config.dataDir);
  const fetcher = new OutboundFetcher({ allowHosts: config.outboundAllowHosts, maxBytes: config.media.maxDownloadBytes, timeoutMs: config.media.downloadTimeoutMs });
  // File URLs use PUBLIC_URL, else the listen address (known once listening; no request runs before that).
  let publicBase = config.publicUrl?.replace(/\/$/, "") ?? "";
  const media: MediaDeps = { files, fetcher, fileUrl: (id) => `${publicBase}/v1/files/${id}` };
  const services: TroupeServices = { config, log, clock, store, accounts, apiKeys, router, usage, vectors, orgIndex, actors, conversation, directory, events, files, media, billing };
  const ai = { router, usage: meter, billing };
  const builtIn: RouteDefinition[] = [
    ...authRoutes(accounts, config.tenancy),
    ...accountRoutes(accounts, (ids) => ledger.usageToDate(ids)),
    ...apiKeyRoutes(apiKeys, (ids) => ledger.usageToDate(ids)),
    ...modelRoutes(ai),
    ...chatRoutes(ai),
    ...embeddingRoutes(ai),
    ...vectorIndexRoutes({ index: orgIndex, usage: meter }),
    ...visionRoutes(ai),
    ...translationRoutes(ai),
    ...audioRoutes({ ...ai, media }),
    ...imageRoutes({ ...ai, media }),
    ...agentRoutes({ actors, conversation, directory, router, billing }),
    ...billingRoutes(new UsageReports(accounts.orgs, billing, clock)),
  ];
  // A test's extra route replaces a built-in with the same method and path.
  const extra = options.extraRoutes?.(services) ?? [];
  const overridden = new Set(extra.map((r) => `${r.method} ${r.path}`));
  const routes = [...builtIn.filter((r) => !overridden.has(`${r.method} ${r.path}`)), ...extra];

  const admission = createAdmission(createAuthenticator(accounts, apiKeys, config.tenancy.apiKeyPrefix), apiKeys);
  const eventsRoute = conversationEventsRoute({ actors, conversation });
  const gateway = createGateway({
    routes,
    wsRoutes: [eventsRoute],
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
  });
  await attachConversationEvents(gateway.app, { route: eventsRoute, admission, events, log, revocations: services.apiKeys.revocations });
  attachFiles(gateway.app, files, log);
  const port = await gateway.listen(config.host, config.port);
  const shownHost = config.host === "0.0.0.0" || config.host === "::" ? "localhost" : config.host;
  const url = config.publicUrl ?? `http://${shownHost}:${port}`;
  publicBase = url.replace(/\/$/, "");

  let stopped: Promise<void> | undefined;
  return {
    services,
    routes,
    gateway,
    port,
    url,
    stop: () =>
      (stopped ??= (async () => {
        await gateway.shutdown(config.shutdownGraceMs);
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
      })()),
  };
}
