// Builds metrics and tracing from the config (each off unless configured,
// and then loading nothing) and the small adapters that connect them to the
// router and the usage sink. The composition root (app.ts) calls these.
import type { ObservabilityConfig } from "../core/config.ts";
import type { Logger } from "../core/log.ts";
import { noMetrics, type Metrics } from "../core/metrics.ts";
import { noTracing, type Tracing } from "../core/tracing.ts";
import type { AttemptObserver } from "../providers/router.ts";
import { recordGroupedIn, type UsageSink } from "../providers/usage.ts";

/** prom-client is imported only when METRICS_PORT is set. */
export async function createMetrics(config: ObservabilityConfig, replica: string): Promise<Metrics> {
  if (!config.metrics) return noMetrics;
  const { createPrometheusMetrics } = await import("../core/prometheus-metrics.ts");
  return createPrometheusMetrics({ replica });
}

/** The OpenTelemetry SDK is imported only when OTEL_EXPORTER_OTLP_ENDPOINT is set. */
export async function createTracing(config: ObservabilityConfig, replica: string, log: Logger): Promise<Tracing> {
  if (!config.tracing) return noTracing;
  const { createOtelTracing } = await import("../core/otel-tracing.ts");
  return createOtelTracing({ ...config.tracing, replica, log });
}

/** Each provider attempt: a counter and a histogram observation, and a client span under the active one. */
export function attemptObserver(metrics: Metrics, tracing: Tracing): AttemptObserver | undefined {
  if (!metrics.enabled && !tracing.enabled) return undefined;
  return {
    attempt(provider, model) {
      const started = performance.now();
      const span = tracing.startSpan(`provider ${provider} ${model}`, {
        kind: "client",
        attributes: { "gen_ai.system": provider, "gen_ai.request.model": model },
      });
      return (outcome, error) => {
        metrics.providerCall(provider, model, outcome, (performance.now() - started) / 1000);
        span.setAttribute("troupe.outcome", outcome);
        span.end(outcome === "success" ? undefined : (error ?? outcome));
      };
    },
  };
}

/** Books every usage record into the ledger totals as it passes to the sink. */
export function meteredUsage(sink: UsageSink, metrics: Metrics): UsageSink {
  if (!metrics.enabled) return sink;
  return {
    record(usage) {
      sink.record(usage);
      metrics.ledger(usage);
    },
    recordGrouped(usage) {
      metrics.ledger(usage);
      return recordGroupedIn(sink, usage);
    },
  };
}
