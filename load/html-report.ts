// The HTML report: one file that opens anywhere, offline. CSS, the one small
// script and the SVG charts are inline, and a Content-Security-Policy of
// default-src 'none' makes the browser refuse any fetch the page might try.
import { fmt } from "./stats.ts";
import type { Report } from "./report.ts";
import { lineChart } from "./svg-chart.ts";

const esc = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const f = (n: number | null, digits = 2): string => fmt(n ?? NaN, digits);

const css = `body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:820px;color:#1d2330;padding:0 12px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px}.sub{color:#5b6475;margin:0 0 16px}
table{border-collapse:collapse;width:100%}th,td{padding:4px 8px;border-bottom:1px solid #e3e6ec;text-align:right}
th:first-child,td:first-child{text-align:left}th{background:#f4f6f9}code{font:12px ui-monospace,monospace}
.cards{display:flex;gap:12px;flex-wrap:wrap}.card{border:1px solid #e3e6ec;border-radius:6px;padding:8px 12px;min-width:120px}
.card b{display:block;font-size:18px}svg{width:100%;height:auto;border:1px solid #e3e6ec;border-radius:6px;margin:6px 0}
svg .t{font-size:13px;font-weight:600}svg .a{font-size:11px;fill:#5b6475}svg .g{stroke:#eef0f4}svg .x{stroke:#9aa3b2}
.rid{cursor:copy}.copied{background:#dff5e3}`;

// Click a request id to copy it (for grepping Troupe's logs and traces).
const script = `document.addEventListener("click",e=>{const c=e.target.closest(".rid");if(!c)return;navigator.clipboard&&navigator.clipboard.writeText(c.textContent).catch(()=>{});c.classList.add("copied");setTimeout(()=>c.classList.remove("copied"),800)});`;

export function htmlReport(r: Report): string {
  const load = r.mode === "open" ? `${r.rate} per second (open loop)` : `${r.concurrency} in flight (closed loop)`;
  const pRow = (name: string, p: Report["latency_ms"]["all"]) =>
    `<tr><td>${esc(name)}</td><td>${p.count}</td><td>${f(p.mean)}</td><td>${f(p.p50)}</td><td>${f(p.p90)}</td><td>${f(p.p99)}</td><td>${f(p.p999)}</td><td>${f(p.max)}</td></tr>`;
  const errors = Object.entries(r.errors_by_code);
  const latency = lineChart("Latency per second", "ms", [
    { name: "p50", color: "#2f6fdf", values: r.per_second.map((s) => s.p50_ms) },
    { name: "p99", color: "#d9485f", values: r.per_second.map((s) => s.p99_ms) },
  ]);
  const throughput = lineChart("Throughput per second", "requests", [
    { name: "ok", color: "#2e9e5b", values: r.per_second.map((s) => s.ok) },
    { name: "errors", color: "#d9485f", values: r.per_second.map((s) => s.errors) },
  ]);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>troupe-load: ${esc(r.scenario)} against ${esc(r.target)}</title><style>${css}</style></head><body>
<h1>troupe-load: ${esc(r.scenario)} (${esc(r.model)})</h1>
<p class="sub">${esc(r.target)} · ${esc(load)} · ${r.duration_s} s${r.ramp_up_s ? ` (ramp-up ${r.ramp_up_s} s)` : ""} · started ${esc(r.started_at)}</p>
<div class="cards"><div class="card">requests<b>${r.requests}</b></div><div class="card">ok<b>${r.ok}</b></div><div class="card">errors<b>${r.errors}</b></div>
<div class="card">throughput<b>${f(r.throughput_rps, 1)}/s</b></div><div class="card">p50<b>${f(r.latency_ms.all.p50)} ms</b></div><div class="card">p99<b>${f(r.latency_ms.all.p99)} ms</b></div></div>
<h2>Latency over time</h2>${latency}
<h2>Throughput</h2>${throughput}
<h2>Percentiles (ms)</h2>
<table id="percentiles"><tr><th>operation</th><th>count</th><th>mean</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th></tr>
${pRow("all", r.latency_ms.all)}${Object.entries(r.latency_ms.by_operation).map(([op, p]) => pRow(op, p)).join("")}</table>
${r.mode === "open" ? `<p class="sub">Open loop: latency runs from each request's scheduled time. Scheduler lag p50 ${f(r.scheduler_lag_ms.p50)} ms, p99 ${f(r.scheduler_lag_ms.p99)} ms.</p>` : ""}
<h2>Errors by code</h2>
${errors.length ? `<table id="errors"><tr><th>status and code</th><th>count</th><th>first seen</th></tr>${errors.map(([k, n]) => `<tr><td>${esc(k)}</td><td>${n}</td><td style="text-align:left">${esc(r.error_examples[k] ?? "")}</td></tr>`).join("")}</table>` : `<p id="errors">None.</p>`}
<h2>Slowest calls</h2>
<table id="slowest"><tr><th>X-Request-Id (click to copy)</th><th>operation</th><th>status</th><th>at</th><th>latency (ms)</th></tr>
${r.slowest.map((s) => `<tr><td><code class="rid">${esc(s.request_id ?? "(none)")}</code></td><td>${esc(s.operation)}</td><td>${s.status}</td><td>${f(s.at_s, 1)} s</td><td>${f(s.latency_ms)}</td></tr>`).join("")}</table>
<script>${script}</script>
</body></html>
`;
}
