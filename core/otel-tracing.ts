// The OpenTelemetry implementation of core/tracing.ts: spans exported as
// OTLP/HTTP JSON to the configured traces URL, W3C trace context in and out.
// Imported lazily (only when OTEL_EXPORTER_OTLP_ENDPOINT is set).
//
// @opentelemetry/sdk-trace is used rather than sdk-trace-base: the latter
// reads OTEL_* variables from the environment itself, and Troupe parses its
// configuration once (core/config.ts). The tracer provider is not registered
// globally (a second Troupe in one process, as tests run, gets its own); only
// the context manager is, since context.with() consults the global one.
import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span, type TextMapGetter } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import type { Logger } from "./log.ts";
import type { SpanHandle, SpanKind as TroupeSpanKind, SpanOptions, Tracing } from "./tracing.ts";

export interface OtelTracingOptions {
  tracesUrl: string;
  serviceName: string;
  /** service.instance.id: which replica made the span. */
  replica: string;
  log: Logger;
  /** How long spans wait in the batch before export. */
  exportDelayMs?: number;
}

const kinds: Record<TroupeSpanKind, SpanKind> = { server: SpanKind.SERVER, client: SpanKind.CLIENT, internal: SpanKind.INTERNAL };

const headerGetter: TextMapGetter<Readonly<Record<string, string>>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key.toLowerCase()],
};

let contextManagerSet = false;

export function createOtelTracing(options: OtelTracingOptions): Tracing {
  if (!contextManagerSet) {
    // Once per process: the async context every span's children are found in.
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    contextManagerSet = true;
  }
  const propagator = new W3CTraceContextPropagator();
  const exporter = new OTLPTraceExporter({ url: options.tracesUrl });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ "service.name": options.serviceName, "service.instance.id": options.replica }),
    // 1 s: traces show up promptly; batches keep the export off the request path.
    spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: options.exportDelayMs ?? 1_000 })],
  });
  const tracer = provider.getTracer("troupe");

  const parentOf = (carrier: Readonly<Record<string, string>> | undefined): Context => {
    const active = context.active();
    if (!carrier || carrier["traceparent"] === undefined) return active;
    return propagator.extract(ROOT_CONTEXT, carrier, headerGetter);
  };

  const start = (name: string, opts: SpanOptions): { span: Span; handle: SpanHandle; parent: Context } => {
    const parent = parentOf(opts.carrier);
    const span = tracer.startSpan(name, { kind: kinds[opts.kind], ...(opts.attributes ? { attributes: opts.attributes } : {}) }, parent);
    return { span, handle: wrap(span), parent };
  };

  return {
    enabled: true,
    async inSpan(name, opts, fn) {
      const { span, handle, parent } = start(name, opts);
      try {
        const result = await context.with(trace.setSpan(parent, span), () => fn(handle));
        handle.end();
        return result;
      } catch (error) {
        handle.end(error);
        throw error;
      }
    },
    startSpan(name, opts) {
      return start(name, opts).handle;
    },
    inject(headers) {
      propagator.inject(context.active(), headers, { set: (carrier, key, value) => (carrier[key] = value) });
    },
    async shutdown() {
      await provider.shutdown().catch((error: unknown) => options.log.warn("trace export at shutdown failed", { error }));
    },
  };
}

function wrap(span: Span): SpanHandle {
  let ended = false;
  const fail = (error: unknown): void => {
    span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
    if (error instanceof Error) span.recordException(error);
  };
  return {
    setAttribute: (name, value) => {
      span.setAttribute(name, value);
    },
    fail,
    end(error) {
      if (ended) return;
      ended = true;
      if (error !== undefined) fail(error);
      span.end();
    },
  };
}
