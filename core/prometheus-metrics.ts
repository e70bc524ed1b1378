// The prom-client implementation of core/metrics.ts. Imported lazily (only
// when METRICS_PORT is set). One registry per process; the series families
// and their labels are listed in docs/operations/observability.md ("Metrics").
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { FastCounter, FastHistogram, type BoundCounter, type BoundHistogram } from "./bound-series.ts";
import type {
  CacheMetricReading,
  DeploymentMetricReading,
  JobState,
  LedgerEntry,
  MetricSources,
  Metrics,
  ProviderCallOutcome,
  RefusalKind,
  RouteMetrics,
  WebhookDeliveryOutcome,
} from "./metrics.ts";

// Seconds. The low end resolves the gateway's own sub-millisecond overhead;
// the high end covers model calls and long streams.
const httpBuckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const providerBuckets = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
// Webhook lag: from the event to the attempt's end; retries stretch it to hours.
const lagBuckets = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 7200, 36000, 86400];

const breakerValue = { closed: 0, half_open: 1, open: 2 } as const;

export interface PrometheusOptions {
  /** Added to every series: which replica answered the scrape. */
  replica: string;
}

export function createPrometheusMetrics(options: PrometheusOptions): Metrics {
  const registry = new Registry();
  registry.setDefaultLabels({ replica: options.replica });
  // Event-loop lag, heap, GC, CPU, handles: prom-client's standard Node set.
  collectDefaultMetrics({ register: registry });
  const registers = [registry];

  // Recorded on the request path: bound series (core/bound-series.ts).
  const http = new FastHistogram(
    registry,
    "troupe_http_request_duration_seconds",
    "Gateway requests by method, route (the declared path) and status, with their duration. status 0: the client went away first.",
    httpBuckets,
  );
  const providerCalls = new FastCounter(registry, "troupe_provider_calls_total", "Provider attempts by provider, model and outcome (each retry and fallback is one attempt).");
  const providerDuration = new FastHistogram(
    registry,
    "troupe_provider_call_duration_seconds",
    "Provider attempt duration by provider, model and outcome (streams: until the first event).",
    providerBuckets,
  );
  const providerSeries = new Map<string, { calls: BoundCounter; duration: BoundHistogram }>();
  const jobTransitions = new Counter({
    name: "troupe_job_transitions_total",
    help: "Video jobs entering each state (queued, processing, completed, failed).",
    labelNames: ["state"] as const,
    registers,
  });
  const webhookDeliveries = new Counter({
    name: "troupe_webhook_deliveries_total",
    help: "Webhook delivery attempts by outcome (succeeded, failed, disabled).",
    labelNames: ["outcome"] as const,
    registers,
  });
  const webhookLag = new Histogram({
    name: "troupe_webhook_delivery_lag_seconds",
    help: "From an event's creation to the end of a delivery attempt, by outcome.",
    labelNames: ["outcome"] as const,
    buckets: lagBuckets,
    registers,
  });
  const refusals: Record<RefusalKind, Counter<"route">> = {
    rate_limit: new Counter({
      name: "troupe_rate_limit_refusals_total",
      help: "Requests refused with 429 rate_limited (per-key limits and login throttling), by route.",
      labelNames: ["route"] as const,
      registers,
    }),
    budget: new Counter({
      name: "troupe_budget_refusals_total",
      help: "Requests refused with 402 budget_exceeded (hard budget limits), by route.",
      labelNames: ["route"] as const,
      registers,
    }),
  };
  const ledgerUsd = new FastCounter(registry, "troupe_ledger_cost_usd_total", "Usage booked by this replica, in USD, by category and key mode (live is billed, test is not).");
  const ledgerRecords = new FastCounter(registry, "troupe_ledger_records_total", "Usage records booked by this replica, by category and key mode.");
  const ledgerSeries = new Map<string, { usd: BoundCounter; records: BoundCounter }>();

  return {
    enabled: true,
    route(method, path) {
      // One bound child per status seen, created on first use: the request
      // path then does one array read and one observe.
      const byStatus: (BoundHistogram | undefined)[] = [];
      const recorder: RouteMetrics = {
        observe(status, seconds) {
          let child = byStatus[status];
          if (!child) {
            child = http.bind({ method: method.toUpperCase(), route: path, status: String(status) });
            byStatus[status] = child;
          }
          child.observe(seconds);
        },
      };
      return recorder;
    },
    providerCall(provider: string, model: string, outcome: ProviderCallOutcome, seconds: number) {
      const key = `${provider}\n${model}\n${outcome}`;
      let series = providerSeries.get(key);
      if (!series) {
        const labels = { provider, model, outcome };
        series = { calls: providerCalls.bind(labels), duration: providerDuration.bind(labels) };
        providerSeries.set(key, series);
      }
      series.calls.inc();
      series.duration.observe(seconds);
    },
    refusal(kind: RefusalKind, route: string) {
      refusals[kind].inc({ route });
    },
    ledger(entry: LedgerEntry) {
      const mode = entry.live ? "live" : "test";
      const key = `${entry.category}\n${mode}`;
      let series = ledgerSeries.get(key);
      if (!series) {
        const labels = { category: entry.category, mode };
        series = { usd: ledgerUsd.bind(labels), records: ledgerRecords.bind(labels) };
        ledgerSeries.set(key, series);
      }
      series.records.inc();
      series.usd.inc(entry.cost_usd);
    },
    jobTransition(state: JobState) {
      jobTransitions.inc({ state });
    },
    webhookDelivery(outcome: WebhookDeliveryOutcome, lagSeconds: number) {
      webhookDeliveries.inc({ outcome });
      webhookLag.observe({ outcome }, Math.max(0, lagSeconds));
    },
    exposition(sources) {
      const scraped = new Registry();
      scraped.setDefaultLabels({ replica: options.replica });
      scrapedSeries(scraped, sources);
      return {
        async render() {
          // Each ends with a newline: one blank line between families, as within a registry.
          return { contentType: registry.contentType, body: `${await registry.metrics()}\n${await scraped.metrics()}` };
        },
      };
    },
  };
}

/** The gauges and copied counters read from the sources when Prometheus scrapes, on their own registry. */
function scrapedSeries(registry: Registry, sources: MetricSources): void {
  const registers = [registry];
  new Gauge({
    name: "troupe_provider_breaker_state",
    help: "This replica's circuit breaker per configured provider: 0 closed, 1 half-open, 2 open.",
    labelNames: ["provider"] as const,
    registers,
    collect() {
      this.reset();
      for (const b of sources.breakers?.() ?? []) this.set({ provider: b.provider }, breakerValue[b.state]);
    },
  });
  // Per upstream deployment: labels bounded by the deployments file (its names, at most 256).
  const perDeployment = (name: string, help: string, value: (d: DeploymentMetricReading) => number | undefined) =>
    new Gauge({
      name,
      help,
      labelNames: ["provider", "deployment"] as const,
      registers,
      collect() {
        this.reset();
        for (const d of sources.deployments?.() ?? []) {
          const v = value(d);
          if (v !== undefined) this.set({ provider: d.provider, deployment: d.deployment }, v);
        }
      },
    });
  perDeployment("troupe_deployment_calls", "Calls sent to each upstream deployment by this replica since it started (each failover step is one).", (d) => d.calls);
  perDeployment("troupe_deployment_errors", "Failed calls of each upstream deployment on this replica since it started.", (d) => d.errors);
  perDeployment("troupe_deployment_breaker_state", "Each upstream deployment's own circuit breaker on this replica: 0 closed, 1 half-open, 2 open.", (d) => breakerValue[d.state]);
  perDeployment("troupe_deployment_rpm_headroom", "Requests a deployment still takes this minute under its own rpm (absent: no rpm set).", (d) => d.rpm_headroom);
  perDeployment("troupe_deployment_tpm_headroom", "Tokens a deployment still takes this minute under its own tpm (absent: no tpm set).", (d) => d.tpm_headroom);
  new Gauge({
    name: "troupe_actors_active",
    help: "Actors active on this replica, per type (Dapr mode: as this replica's daprd reports them).",
    labelNames: ["type"] as const,
    registers,
    async collect() {
      const read = sources.activeActors;
      if (!read) return;
      const counts = await read();
      this.reset();
      for (const c of counts) this.set({ type: c.type }, c.count);
    },
  });
  new Gauge({
    name: "troupe_jobs_in_flight",
    help: "Video jobs not yet completed or failed, per state (organization-wide, the same on every replica).",
    labelNames: ["state"] as const,
    registers,
    async collect() {
      const read = sources.jobsInFlight;
      if (!read) return;
      const counts = await read();
      this.reset();
      for (const c of counts) this.set({ state: c.state }, c.count);
    },
  });
  // The response cache: counted by the cache itself and copied in at scrape time (nothing on the hit path).
  const cacheCounter = (name: string, help: string, value: (c: CacheMetricReading) => number) =>
    new Counter({
      name,
      help,
      registers,
      collect() {
        const reading = sources.cache?.();
        if (!reading) return;
        this.reset();
        this.inc(value(reading));
      },
    });
  new Counter({
    name: "troupe_cache_lookups_total",
    help: "Response-cache decisions on this replica by outcome: hit, miss, refresh (asked to call again and store), bypass (asked not to use the cache).",
    labelNames: ["outcome"] as const,
    registers,
    collect() {
      const reading = sources.cache?.();
      if (!reading) return;
      this.reset();
      for (const [outcome, count] of Object.entries(reading.lookups)) this.inc({ outcome }, count);
    },
  });
  cacheCounter("troupe_cache_hit_bytes_total", "Bytes (JSON) of the answers this replica served from the response cache.", (c) => c.hitBytes);
  cacheCounter("troupe_cache_stores_total", "Answers this replica wrote to the response cache.", (c) => c.stores);
  cacheCounter("troupe_cache_stored_bytes_total", "Bytes (compressed, as stored) of the answers this replica wrote to the response cache.", (c) => c.storedBytes);
  new Gauge({
    name: "troupe_cache_bytes",
    help: "Bytes the response cache holds now, every organization (the embedded store; absent on Redis, whose per-organization counts are not summed).",
    registers,
    collect() {
      this.reset();
      const held = sources.cache?.().heldBytes;
      if (held !== undefined) this.set(held);
    },
  });
}
