// What Troupe records for Prometheus, as an interface with
// a do-nothing default. The prom-client implementation
// (core/prometheus-metrics.ts) is imported only when METRICS_PORT is set, so
// with metrics off nothing is loaded and every recording call is a no-op on
// a frozen object.
//
// Hot-path rule: a request records exactly one histogram observation through
// a RouteMetrics bound when the route is registered (labels pre-bound); the
// rest is recorded off the request path or read at scrape time (sources).
//
// Two objects, so nothing is completed after construction: the recorder
// (`Metrics`) is built first, since the router and the features record into
// it; the exposition (`MetricsExposition`, what /metrics renders) is built
// last by the composition root from the finished parts it reads (the
// router's breakers, the actor host, the cache's counts).

/** A route's recorder, bound once at registration. */
export interface RouteMetrics {
  /** One request finished: its status (0 = the client went away first) and its duration. */
  observe(status: number, seconds: number): void;
}

/** How a provider attempt ended (troupe_provider_calls_total{outcome}). */
export type ProviderCallOutcome = "success" | "error" | "timeout" | "rejected" | "aborted" | "breaker_open";

/** The refusals the gateway counts as it renders them (troupe_*_refusals_total). */
export type RefusalKind = "rate_limit" | "budget";

/** Which refusal an error code is, if any (HTTP routes and WebSocket upgrades count alike). */
export function refusalOf(code: string): RefusalKind | undefined {
  if (code === "rate_limited") return "rate_limit";
  if (code === "budget_exceeded") return "budget";
  return undefined;
}

/** A job's states (docs/api/video-jobs.md): what the JobActor reports on each transition. */
export type JobState = "queued" | "processing" | "completed" | "failed";

/** A webhook delivery attempt's outcome (the delivery record's status, plus the webhook being disabled). */
export type WebhookDeliveryOutcome = "succeeded" | "failed" | "disabled";

/** A usage record's figures, as the ledger totals read them. */
export interface LedgerEntry {
  category: string;
  live: boolean;
  cost_usd: number;
}

/** Breaker state per provider, read at scrape time from this replica's router. */
export interface BreakerReading {
  provider: string;
  state: "closed" | "open" | "half_open";
}

/** One upstream deployment (TROUPE_DEPLOYMENTS_FILE) on this replica, read at scrape time; names come from the file only. */
export interface DeploymentMetricReading {
  provider: string;
  deployment: string;
  state: "closed" | "open" | "half_open";
  /** Calls sent to it since start (each failover step is one). */
  calls: number;
  errors: number;
  /** What is left of its own limits this minute; undefined: it has no such limit. */
  rpm_headroom: number | undefined;
  tpm_headroom: number | undefined;
}

/** Active actors per type on this replica, read at scrape time. */
export interface ActorCountReading {
  type: string;
  count: number;
}

/** The response cache's counts on this replica since it started (gateway/cache/cache-metrics.ts), read at scrape time. */
export interface CacheMetricReading {
  /** Router calls the cache decided, by outcome (a request makes one). */
  lookups: Readonly<Record<"hit" | "miss" | "refresh" | "bypass", number>>;
  /** JSON bytes of the answers served from the cache. */
  hitBytes: number;
  /** Answers written to the store, and their stored (compressed) bytes. */
  stores: number;
  storedBytes: number;
  /** What the store holds now, all organizations (absent: the store cannot say cheaply, as Redis). */
  heldBytes?: number | undefined;
}

/**
 * Values read when Prometheus scrapes (gauges that describe a state rather
 * than count events), given once to `Metrics.exposition`. Each is optional:
 * a source absent is simply not reported (its family is still defined).
 */
export interface MetricSources {
  breakers?: () => readonly BreakerReading[];
  deployments?: () => readonly DeploymentMetricReading[];
  activeActors?: () => readonly ActorCountReading[] | Promise<readonly ActorCountReading[]>;
  /** Jobs not yet completed or failed, per state (the jobs branch wires it). */
  jobsInFlight?: () => Promise<readonly { state: JobState; count: number }[]>;
  cache?: () => CacheMetricReading;
}

export interface Metrics {
  readonly enabled: boolean;
  route(method: string, path: string): RouteMetrics;
  providerCall(provider: string, model: string, outcome: ProviderCallOutcome, seconds: number): void;
  refusal(kind: RefusalKind, route: string): void;
  /** Every billed (or test) usage record, as the ledger books it. */
  ledger(entry: LedgerEntry): void;
  /** A job entered `state` (the jobs branch calls this on each transition). */
  jobTransition(state: JobState): void;
  /** One delivery attempt ended; lagSeconds = event created_at → this attempt's end. */
  webhookDelivery(outcome: WebhookDeliveryOutcome, lagSeconds: number): void;
  /** What /metrics renders: these counters and the scrape-time gauges read from `sources` (built last, once the sources exist). */
  exposition(sources: MetricSources): MetricsExposition;
}

/** The Prometheus text exposition of one Metrics and its scrape-time sources. */
export interface MetricsExposition {
  render(): Promise<{ contentType: string; body: string }>;
}

const noExposition: MetricsExposition = Object.freeze({ render: async () => ({ contentType: "text/plain; version=0.0.4; charset=utf-8", body: "" }) });

const noRoute: RouteMetrics = Object.freeze({ observe: () => undefined });

/** Metrics off: every call does nothing. */
export const noMetrics: Metrics = Object.freeze({
  enabled: false,
  route: () => noRoute,
  providerCall: () => undefined,
  refusal: () => undefined,
  ledger: () => undefined,
  jobTransition: () => undefined,
  webhookDelivery: () => undefined,
  exposition: () => noExposition,
});
