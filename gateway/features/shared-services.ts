// The services every feature shares, built once from the config: the data
// store, accounts and keys, the provider router, the usage ledger, outbound
// fetches and files, the actor host (actors are registered by the features),
// metrics and tracing. Nothing here starts serving. The router is built
// last of its inputs (attempt observer, the organizations' own keys), each
// handed to its constructor.
import { systemClock, type Clock } from "../../core/clock.ts";
import type { Config } from "../config.ts";
import type { Logger } from "../../core/log.ts";
import type { Metrics } from "../../core/metrics.ts";
import type { Tracing } from "../../core/tracing.ts";
import type { ActorHost } from "../../actors/host.ts";
import { createActorHost } from "../../actors/hosts/create-host.ts";
import { createFileStore } from "../../media/create-file-store.ts";
import { IndexedFileStore } from "../../media/indexed-file-store.ts";
import { Capabilities } from "../../media/media-tools.ts";
import { OutboundFetcher } from "../../media/outbound-fetch.ts";
import type { MediaDeps } from "../../media/rehost.ts";
import { createRouter, type Router, type RouterFactory } from "../../providers/index.ts";
import { AccountService } from "../../tenancy/accounts.ts";
import { ApiKeyService } from "../../tenancy/api-keys.ts";
import { createLedgerStore } from "../../tenancy/create-ledger-store.ts";
import type { DataStore } from "../../core/data-store.ts";
import { EmbeddedDataStore } from "../../tenancy/embedded-data-store.ts";
import type { LedgerStore } from "../../tenancy/ledger.ts";
import { redisTarget } from "../../tenancy/redis-target.ts";
import { attemptObserver, createMetrics, createTracing } from "../observability.ts";
import { createOwnCredentials, type OwnCredentials } from "./provider-credentials.ts";
import { PublicUrl } from "./public-url.ts";

export interface SharedServices {
  config: Config;
  log: Logger;
  clock: Clock;
  /** Prometheus series (no-op when METRICS_PORT is unset). */
  metrics: Metrics;
  /** OpenTelemetry spans (no-op when OTEL_EXPORTER_OTLP_ENDPOINT is unset). */
  tracing: Tracing;
  store: DataStore;
  accounts: AccountService;
  apiKeys: ApiKeyService;
  router: Router;
  /** The organizations' own provider keys (docs/operations/byok.md): the router resolves them, the provider-credentials routes manage them. */
  ownCredentials: OwnCredentials;
  ledger: LedgerStore;
  fetcher: OutboundFetcher;
  /** The file backend with each organization's file index (deletion, retention). */
  files: IndexedFileStore;
  media: MediaDeps;
  /** Which media tools are installed (looked up once at start) and what cannot run without them: /readyz lists the gaps. */
  capabilities: Capabilities;
  publicUrl: PublicUrl;
  actors: ActorHost;
}

export interface SharedOverrides {
  clock?: Clock;
  /** Builds the router with the wiring given (tests point providers at fakes with short backoffs); default: createRouter over config.providers. */
  router?: RouterFactory;
  /** The usage ledger; default: Redis with REDIS_URL, else lmdb on its own thread (bench:chat compares it on the event loop). */
  ledger?: LedgerStore;
}

/** The Redis store (ioredis) is imported only when REDIS_URL or REDIS_CLUSTER_NODES is set: the embedded start must not pay for it. */
export async function createDataStore(config: Config, clock: Clock): Promise<DataStore> {
  const redis = redisTarget(config);
  if (redis) {
    const { RedisDataStore } = await import("../../tenancy/redis-data-store.ts");
    return new RedisDataStore(redis);
  }
  return new EmbeddedDataStore(config.dataDir, clock);
}

export async function createSharedServices(config: Config, log: Logger, overrides: SharedOverrides): Promise<SharedServices> {
  const clock = overrides.clock ?? systemClock;
  const metrics = await createMetrics(config.observability, config.replica);
  const tracing = await createTracing(config.observability, config.replica, log);
  const store = await createDataStore(config, clock);
  const apiKeys = new ApiKeyService(store, config.tenancy, clock, log);
  await apiKeys.start();
  const accounts = new AccountService(store, config.tenancy, clock, apiKeys);
  const ownCredentials = createOwnCredentials(config, store, clock);
  const wiring = { observer: attemptObserver(metrics, tracing), ownCredentials: ownCredentials.resolve };
  const router = overrides.router ? overrides.router(wiring) : createRouter(config.providers, wiring);
  const ledger = overrides.ledger ?? (await createLedgerStore(config));
  const files = new IndexedFileStore(await createFileStore(config.media, config.dataDir), store);
  const fetcher = new OutboundFetcher({ allowHosts: config.outboundAllowHosts, maxBytes: config.media.maxDownloadBytes, timeoutMs: config.media.downloadTimeoutMs });
  const publicUrl = new PublicUrl(config.publicUrl);
  const capabilities = await Capabilities.detect();
  // Said once at start, where whoever started the server looks first; /readyz keeps saying it.
  if (capabilities.unavailable.length > 0) log.warn(capabilities.summary(), { unavailable: capabilities.unavailable });
  const media: MediaDeps = { files, fetcher, fileUrl: (id) => `${publicUrl.base}/v1/files/${id}`, ownFileId: (url) => publicUrl.fileIdOf(url), capabilities };
  const actors = await createActorHost({ mode: config.mode, dataDir: config.dataDir, actors: config.actors, clock, log, tracing });
  return { config, log, clock, metrics, tracing, store, accounts, apiKeys, router, ownCredentials, ledger, fetcher, files, media, capabilities, publicUrl, actors };
}

/** Closes what createSharedServices opened, once the actor host and every feature stopped. */
export async function closeSharedServices(s: SharedServices): Promise<void> {
  s.fetcher.close();
  await s.ledger.close();
  await s.router.close();
  await s.ownCredentials.close();
  s.apiKeys.stop();
  await s.files.close();
  await s.store.close();
  await s.tracing.shutdown();
}
