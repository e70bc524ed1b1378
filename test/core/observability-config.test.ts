// The observability settings, parsed once in core/config.ts: off by default,
// the OTLP traces URL derived from the endpoint (or given whole), and bad
// values refused with the variable's name.
import t from "tap";
import { loadConfig } from "../../gateway/config.ts";

t.test("defaults: metrics and tracing off", async (t) => {
  const c = loadConfig({});
  t.equal(c.observability.metrics, undefined);
  t.equal(c.observability.tracing, undefined);
  t.equal(c.observability.consoleSnapshotIntervalMs, 5000);
});

t.test("METRICS_PORT turns metrics on; 0 is any free port", async (t) => {
  t.same(loadConfig({ METRICS_PORT: "9464" }).observability.metrics, { port: 9464, host: "0.0.0.0" });
  t.same(loadConfig({ METRICS_PORT: "0", METRICS_HOST: "127.0.0.1" }).observability.metrics, { port: 0, host: "127.0.0.1" });
  t.equal(loadConfig({ METRICS_PORT: " " }).observability.metrics, undefined, "blank is unset");
  t.throws(() => loadConfig({ METRICS_PORT: "70000" }), /METRICS_PORT/);
  t.throws(() => loadConfig({ METRICS_PORT: "nine" }), /METRICS_PORT/);
});

t.test("OTLP: <endpoint>/v1/traces, or the traces URL as given", async (t) => {
  t.same(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" }).observability.tracing, { tracesUrl: "http://collector:4318/v1/traces", serviceName: "troupe" });
  t.same(
    loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:4318", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://b:9999/traces", OTEL_SERVICE_NAME: "gw" }).observability.tracing,
    { tracesUrl: "http://b:9999/traces", serviceName: "gw" },
  );
  t.throws(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "not a url" }), /OTEL_EXPORTER_OTLP_ENDPOINT/);
});
