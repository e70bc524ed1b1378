// What recording costs per chat request, measured in process (immune to the
// load-generator noise of the HTTP figures): the route histogram observation,
// the provider attempt's counter + histogram, and the ledger counters: the
// four recordings one chat request makes with metrics on.
import { createPrometheusMetrics } from "../../core/prometheus-metrics.ts";

export function measureRecordingCost(iterations = 1_000_000): { nsPerRequest: number } {
  const metrics = createPrometheusMetrics({ replica: "bench" });
  const route = metrics.route("post", "/v1/chat/completions");
  const record = { category: "chat", live: false, cost_usd: 0.000012 };
  const once = (i: number): void => {
    route.observe(200, 0.0003 + (i % 7) * 0.0001);
    metrics.providerCall("openai", "gpt-4.1-mini", "success", 0.0002);
    metrics.ledger(record);
  };
  for (let i = 0; i < 100_000; i++) once(i); // warm-up (JIT)
  const started = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) once(i);
  const elapsedNs = Number(process.hrtime.bigint() - started);
  return { nsPerRequest: elapsedNs / iterations };
}
