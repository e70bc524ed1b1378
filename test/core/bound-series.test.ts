// The bound series the request path records into: bucket placement at the
// boundaries (a value equal to a bound counts in it), cumulative buckets,
// +Inf = count, sums, and the Prometheus text prom-client renders from them.
import t from "tap";
import { Registry } from "prom-client";
import { FastCounter, FastHistogram } from "../../core/bound-series.ts";
import { parsePrometheus, sampleValue } from "../support/prometheus-text.ts";

t.test("histogram buckets are cumulative, bounds inclusive, +Inf is the count", async (t) => {
  const registry = new Registry();
  const h = new FastHistogram(registry, "test_seconds", "test histogram", [1, 0.001]);
  const a = h.bind({ route: "/a" });
  for (const v of [0.0004, 0.001, 0.7, 100]) a.observe(v);
  h.bind({ route: "/b" }).observe(2);
  t.not(h.bind({ route: "/a" }), a, "a second bind is a new handle… (onto the same series, as the count shows)");
  h.bind({ route: "/a" }).observe(0.5);
  const samples = parsePrometheus(await registry.metrics());
  t.equal(sampleValue(samples, "test_seconds_bucket", { route: "/a", le: "0.001" }), 2, "0.0004 and 0.001 (the bound itself)");
  t.equal(sampleValue(samples, "test_seconds_bucket", { route: "/a", le: "1" }), 4, "cumulative: + 0.7 and 0.5");
  t.equal(sampleValue(samples, "test_seconds_bucket", { route: "/a", le: "+Inf" }), 5);
  t.equal(sampleValue(samples, "test_seconds_count", { route: "/a" }), 5);
  t.equal(sampleValue(samples, "test_seconds_sum", { route: "/a" }), 0.0004 + 0.001 + 0.7 + 100 + 0.5);
  t.equal(sampleValue(samples, "test_seconds_bucket", { route: "/b", le: "1" }), 0);
  t.equal(sampleValue(samples, "test_seconds_bucket", { route: "/b", le: "+Inf" }), 1);
  t.match(await registry.metrics(), /# TYPE test_seconds histogram/);
  h.reset();
  t.equal(parsePrometheus(await registry.metrics()).length, 0, "reset empties it");
});

t.test("counters add what they are given per bound label set", async (t) => {
  const registry = new Registry();
  registry.setDefaultLabels({ replica: "7" });
  const c = new FastCounter(registry, "test_total", "test counter");
  c.bind({ kind: "x" }).inc();
  c.bind({ kind: "x" }).inc(2.5);
  c.bind({ kind: "y" }).inc();
  const text = await registry.metrics();
  t.match(text, /# TYPE test_total counter/);
  const samples = parsePrometheus(text);
  t.equal(sampleValue(samples, "test_total", { kind: "x", replica: "7" }), 3.5, "default labels added by the registry");
  t.equal(sampleValue(samples, "test_total", { kind: "y" }), 1);
  c.reset();
  t.equal(parsePrometheus(await registry.metrics()).length, 0);
});
