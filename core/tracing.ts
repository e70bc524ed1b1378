// Traces as a small interface with a do-nothing default.
// The OpenTelemetry implementation (core/otel-tracing.ts) is imported only
// when OTEL_EXPORTER_OTLP_ENDPOINT is set, so with tracing off no OTel code
// loads and every call below is a no-op.
//
// Spans Troupe makes: the gateway's server span per request, an actor span
// per turn (Dapr: on the replica hosting the actor, child of the caller's
// span through the W3C `traceparent` daprd forwards), a span per provider
// attempt. Context flows through async code (AsyncLocalStorage), so a
// provider span started inside an actor turn is that turn's child.

export type SpanKind = "server" | "client" | "internal";
export type SpanAttributes = Record<string, string | number | boolean>;

export interface SpanHandle {
  setAttribute(name: string, value: string | number | boolean): void;
  /** Marks the span failed (it still ends normally). */
  fail(error: unknown): void;
  /** Ends the span; an error marks it failed. Later calls do nothing. */
  end(error?: unknown): void;
}

export interface SpanOptions {
  kind: SpanKind;
  attributes?: SpanAttributes;
  /** Headers carrying a W3C `traceparent` to continue (incoming requests); else the active span is the parent. */
  carrier?: Readonly<Record<string, string>>;
}

export interface Tracing {
  readonly enabled: boolean;
  /** Runs `fn` with a new span active (its children see it as parent); ends it when `fn` settles. */
  inSpan<T>(name: string, options: SpanOptions, fn: (span: SpanHandle) => Promise<T>): Promise<T>;
  /** Starts a leaf span under the active one without making it active (the caller ends it). */
  startSpan(name: string, options: SpanOptions): SpanHandle;
  /** Writes the active span's `traceparent` (and `tracestate`) into outgoing headers. */
  inject(headers: Record<string, string>): void;
  /** Flushes what is buffered and stops exporting. */
  shutdown(): Promise<void>;
}

const noSpan: SpanHandle = Object.freeze({ setAttribute: () => undefined, fail: () => undefined, end: () => undefined });

/** Tracing off. */
export const noTracing: Tracing = Object.freeze({
  enabled: false,
  inSpan: <T>(_name: string, _options: SpanOptions, fn: (span: SpanHandle) => Promise<T>) => fn(noSpan),
  startSpan: () => noSpan,
  inject: () => undefined,
  shutdown: async () => undefined,
});
