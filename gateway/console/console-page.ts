// The operator's console: one static HTML page and one script, no framework,
// nothing from a CDN. The script reads /console/data.json with the session
// cookie every 5 s and renders it with textContent (never HTML from data);
// without a session it shows a login form that posts to /v1/auth/login,
// which sets the cookie. The traffic charts are inline SVG drawn here from
// the request log's aggregates (each point carries its value in data-*
// attributes; lines differ by dash pattern and marker and are labelled, so
// they read without colour); the request log section reads
// /v1/projects/{id}/requests with the same session.

export const consoleHtml = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Troupe console</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f5f6f8; }
  header { background: #1d2330; color: #fff; padding: 10px 20px; display: flex; gap: 16px; align-items: baseline; }
  header h1 { font-size: 18px; margin: 0; }
  header .meta { opacity: .75; font-size: 12px; }
  main { padding: 16px 20px; display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 16px; }
  section { background: #fff; border: 1px solid #dde1e8; border-radius: 6px; padding: 12px 14px; }
  section h2 { font-size: 15px; margin: 0 0 8px; }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: 3px 8px 3px 0; border-bottom: 1px solid #eef0f3; }
  th { font-weight: 600; color: #596275; }
  .state-closed { color: #137333; font-weight: 600; }
  .state-open { color: #b3261e; font-weight: 600; }
  .state-half_open { color: #a15c00; font-weight: 600; }
  .muted { color: #7a8294; }
  #login { max-width: 320px; margin: 40px auto; background: #fff; padding: 20px; border-radius: 6px; border: 1px solid #dde1e8; }
  #login input { display: block; width: 100%; margin: 4px 0 10px; padding: 6px; box-sizing: border-box; }
  .error { color: #b3261e; }
  .wide { grid-column: 1 / -1; }
  .charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(300px, 1fr)); gap: 10px; margin-bottom: 14px; }
  .charts h3 { grid-column: 1 / -1; font-size: 14px; margin: 6px 0 0; }
  svg.chart { width: 100%; height: auto; background: #fbfcfd; border: 1px solid #eef0f3; }
  svg.chart text { font: 10px system-ui, sans-serif; fill: #1d2330; }
  #log-filters { display: flex; flex-wrap: wrap; gap: 6px; margin-bottom: 8px; }
  #log-filters input, #log-filters select { padding: 3px; }
</style>
</head>
<body>
<header><h1>Troupe console</h1><span class="meta" id="meta">loading…</span>
<label class="meta">organization <select id="org"></select></label></header>
<form id="login" hidden>
  <h2>Sign in (owners and admins)</h2>
  <label>Email <input id="email" type="email" autocomplete="username" required></label>
  <label>Password <input id="password" type="password" autocomplete="current-password" required></label>
  <button type="submit">Sign in</button>
  <p class="error" id="login-error"></p>
</form>
<p class="error" id="error" hidden></p>
<main id="panels" hidden>
  <section><h2>Providers (circuit breakers per replica)</h2><div id="providers"></div></section>
  <section><h2>Active actors per type per replica</h2><div id="actors"></div></section>
  <section><h2>Jobs in flight</h2><div id="jobs"></div></section>
  <section><h2>Webhook failures</h2><div id="webhooks"></div></section>
  <section><h2>Usage today (UTC)</h2><div id="usage"></div></section>
  <section><h2>Budgets</h2><div id="budgets"></div></section>
  <section class="wide"><h2>Traffic, last 24 hours (hourly, UTC)</h2><div id="traffic"></div></section>
  <section class="wide"><h2>Keys against their limits</h2><div id="key-use"></div></section>
  <section class="wide"><h2>Request log</h2>
    <form id="log-filters">
      <select id="log-project" aria-label="project"></select>
      <input id="log-from" placeholder="from (ISO time)" aria-label="from">
      <input id="log-to" placeholder="to (ISO time)" aria-label="to">
      <input id="log-key" placeholder="api_key_id" aria-label="api_key_id">
      <input id="log-model" placeholder="model" aria-label="model">
      <input id="log-provider" placeholder="provider" aria-label="provider">
      <input id="log-status" placeholder="status" aria-label="status" size="5">
      <input id="log-error" placeholder="error_code" aria-label="error_code">
      <button type="submit">Search</button>
    </form>
    <div id="log"></div>
    <button id="log-next" type="button" hidden>Next page</button>
  </section>
</main>
<script src="/console/console.js"></script>
</body>
</html>
`;

export const consoleScript = `"use strict";
const refreshMs = 5000;
const $ = (id) => document.getElementById(id);
let selectedOrg = new URLSearchParams(location.search).get("org") || "";

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

function table(headers, rows) {
  if (rows.length === 0) return el("p", "none", "muted");
  const t = el("table");
  const head = el("tr");
  for (const h of headers) head.appendChild(el("th", h));
  t.appendChild(head);
  for (const row of rows) {
    const tr = el("tr");
    for (const cell of row) tr.appendChild(cell instanceof Node ? wrapCell(cell) : el("td", cell));
    t.appendChild(tr);
  }
  return t;
}

function wrapCell(node) {
  const td = el("td");
  td.appendChild(node);
  return td;
}

function fill(id, content) {
  const box = $(id);
  box.replaceChildren(content);
}

function sectionContent(section, headers, toRow) {
  if (!section.available) return el("p", section.reason, "muted");
  return table(headers, section.rows.map(toRow));
}

function age(iso, now) {
  return Math.max(0, Math.round((Date.parse(now) - Date.parse(iso)) / 1000)) + " s ago";
}

const svgNs = "http://www.w3.org/2000/svg";
function svg(tag, attrs, text) {
  const node = document.createElementNS(svgNs, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = String(text);
  return node;
}

// One chart: lines (dash pattern + marker shape + end label each) or hatched bars, with a legend.
// Every point is a marker carrying data-series, data-start and data-value: what the chart was drawn from.
function chart(title, points, series, unit) {
  const w = 320, h = 150, left = 44, right = 64, top = 22, bottom = 22;
  const root = svg("svg", { viewBox: "0 0 " + w + " " + h, class: "chart", role: "img", "aria-label": title, "data-chart": title });
  const defs = svg("defs");
  const hatch = svg("pattern", { id: "hatch-" + Math.random().toString(36).slice(2), width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" });
  hatch.appendChild(svg("line", { x1: 0, y1: 0, x2: 0, y2: 6, stroke: "#1d2330", "stroke-width": 2 }));
  defs.appendChild(hatch);
  root.appendChild(defs);
  root.appendChild(svg("text", { x: 4, y: 13 }, title));
  const values = series.flatMap((s) => points.map((p) => p[s.key] ?? 0));
  const max = Math.max(1e-9, ...values);
  const n = Math.max(1, points.length - 1);
  const x = (i) => left + (i / n) * (w - left - right);
  const y = (v) => top + (1 - v / max) * (h - top - bottom);
  root.appendChild(svg("line", { x1: left, y1: h - bottom, x2: w - right, y2: h - bottom, stroke: "#596275" }));
  root.appendChild(svg("line", { x1: left, y1: top, x2: left, y2: h - bottom, stroke: "#596275" }));
  root.appendChild(svg("text", { x: left - 4, y: top + 4, "text-anchor": "end" }, fmtValue(max, unit)));
  root.appendChild(svg("text", { x: left - 4, y: h - bottom, "text-anchor": "end" }, "0"));
  if (points.length > 0) {
    root.appendChild(svg("text", { x: left, y: h - 6 }, hourLabel(points[0].start_ms)));
    root.appendChild(svg("text", { x: w - right, y: h - 6, "text-anchor": "end" }, hourLabel(points[points.length - 1].start_ms)));
  }
  series.forEach((s, si) => {
    const g = svg("g", { "data-series": s.key, "aria-label": s.label });
    if (s.bars) {
      const bw = Math.max(2, (w - left - right) / points.length - 2);
      points.forEach((p, i) => {
        const v = p[s.key] ?? 0;
        const rect = svg("rect", { x: x(i) - bw / 2, y: y(v), width: bw, height: h - bottom - y(v), fill: "url(#" + hatch.id + ")", stroke: "#1d2330", "stroke-width": 0.5, "data-series": s.key, "data-start": new Date(p.start_ms).toISOString(), "data-value": v });
        rect.appendChild(svg("title", {}, s.label + " " + hourLabel(p.start_ms) + ": " + fmtValue(v, unit)));
        g.appendChild(rect);
      });
    } else {
      const drawn = points.map((p, i) => ({ i, v: p[s.key] })).filter((d) => d.v !== null && d.v !== undefined);
      if (drawn.length > 0) g.appendChild(svg("polyline", { points: drawn.map((d) => x(d.i) + "," + y(d.v)).join(" "), fill: "none", stroke: "#1d2330", "stroke-width": 1.5, "stroke-dasharray": s.dash || "none" }));
      for (const d of drawn) {
        const p = points[d.i];
        const attrs = { "data-series": s.key, "data-start": new Date(p.start_ms).toISOString(), "data-value": d.v, fill: s.hollow ? "#fff" : "#1d2330", stroke: "#1d2330" };
        const marker = s.marker === "square"
          ? svg("rect", { ...attrs, x: x(d.i) - 2.5, y: y(d.v) - 2.5, width: 5, height: 5 })
          : s.marker === "triangle"
            ? svg("polygon", { ...attrs, points: x(d.i) + "," + (y(d.v) - 3) + " " + (x(d.i) - 3) + "," + (y(d.v) + 2.5) + " " + (x(d.i) + 3) + "," + (y(d.v) + 2.5) })
            : svg("circle", { ...attrs, cx: x(d.i), cy: y(d.v), r: 2.5 });
        marker.appendChild(svg("title", {}, s.label + " " + hourLabel(p.start_ms) + ": " + fmtValue(d.v, unit)));
        g.appendChild(marker);
      }
      const last = drawn[drawn.length - 1];
      if (last) g.appendChild(svg("text", { x: w - right + 4, y: y(last.v) + 3 }, s.label));
    }
    root.appendChild(g);
  });
  // The legend names each line's pattern, so the chart reads in greyscale.
  series.forEach((s, si) => {
    const lx = 110 + si * 70;
    root.appendChild(svg("line", { x1: lx, y1: 10, x2: lx + 14, y2: 10, stroke: "#1d2330", "stroke-width": s.bars ? 6 : 1.5, "stroke-dasharray": s.dash || "none" }));
    root.appendChild(svg("text", { x: lx + 17, y: 13 }, s.label + (s.bars ? " (hatched)" : "")));
  });
  return root;
}

function hourLabel(ms) {
  return new Date(ms).toISOString().slice(11, 16);
}

function fmtValue(v, unit) {
  if (unit === "usd") return "$" + Number(v).toFixed(v < 1 ? 4 : 2);
  if (unit === "ms") return Math.round(v) + " ms";
  return String(Math.round(v * 100) / 100);
}

function renderTraffic(section) {
  if (!section.available) return el("p", section.reason, "muted");
  const box = el("div");
  for (const s of section.rows) {
    const row = el("div", undefined, "charts");
    row.dataset.scope = s.scope;
    row.dataset.id = s.id;
    row.appendChild(el("h3", (s.scope === "organization" ? "Organization " : "Project ") + s.name));
    row.appendChild(chart("Requests and errors", s.points, [
      { key: "requests", label: "requests", marker: "circle" },
      { key: "errors", label: "errors", dash: "5 3", marker: "square", hollow: true },
    ]));
    row.appendChild(chart("Latency", s.points, [
      { key: "p50_ms", label: "p50", marker: "circle" },
      { key: "p95_ms", label: "p95", dash: "5 3", marker: "square", hollow: true },
      { key: "p99_ms", label: "p99", dash: "1 2", marker: "triangle" },
    ], "ms"));
    row.appendChild(chart("Spend", s.points, [{ key: "spend_usd", label: "USD", bars: true }], "usd"));
    box.appendChild(row);
  }
  return box;
}

function limitCell(used, limit, unit) {
  if (limit === null || limit === undefined) return el("span", fmtValue(used, unit) + " (no limit)", "muted");
  return el("span", fmtValue(used, unit) + " of " + fmtValue(limit, unit) + " (" + Math.round((used / Math.max(limit, 1e-9)) * 100) + " %)");
}

let logAfter = null;
async function loadLog(more) {
  const project = $("log-project").value;
  if (!project) return;
  const params = new URLSearchParams();
  const pick = [["from", "log-from"], ["to", "log-to"], ["api_key_id", "log-key"], ["model", "log-model"], ["provider", "log-provider"], ["status", "log-status"], ["error_code", "log-error"]];
  for (const [name, id] of pick) if ($(id).value.trim()) params.set(name, $(id).value.trim());
  params.set("limit", "25");
  if (more && logAfter) params.set("after", logAfter);
  const res = await fetch("/v1/projects/" + encodeURIComponent(project) + "/requests?" + params, { credentials: "same-origin" });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) {
    fill("log", el("p", (body.error && body.error.message) || ("HTTP " + res.status), "error"));
    return;
  }
  logAfter = body.next_cursor;
  $("log-next").hidden = logAfter === null;
  const rows = body.data.map((e) => [e.created_at, e.request_id, e.api_key_id, e.route, e.model || "—", e.provider || "—", String(e.status), e.error_code || "", e.latency_ms + " ms", String(e.input_tokens + e.output_tokens), e.cost_usd.toFixed(6)]);
  const t = table(["at", "request", "key", "route", "model", "provider", "status", "error", "latency", "tokens", "cost (USD)"], rows);
  if (more && $("log").firstChild && $("log").firstChild.tagName === "TABLE" && t.tagName === "TABLE") {
    for (const tr of [...t.querySelectorAll("tr")].slice(1)) $("log").firstChild.appendChild(tr);
  } else fill("log", t);
  $("log").dataset.loaded = "true";
}

function render(data) {
  $("meta").textContent = "served by replica " + data.served_by + " at " + data.generated_at + " — refreshes every 5 s";
  const org = $("org");
  org.replaceChildren(...data.organizations.map((o) => {
    const option = el("option", o.name + " (" + o.role + ")");
    option.value = o.id;
    option.selected = o.id === data.organization.id;
    return option;
  }));
  const providers = [...new Set(data.replicas.flatMap((r) => r.breakers.map((b) => b.provider)))].sort();
  fill("providers", table(["provider", ...data.replicas.map((r) => "replica " + r.replica)], providers.map((p) =>
    [p, ...data.replicas.map((r) => {
      const b = r.breakers.find((x) => x.provider === p);
      return b ? el("span", b.state.replace("_", "-"), "state-" + b.state) : el("span", "—", "muted");
    })])));
  const actorRows = data.replicas.flatMap((r) => r.actors_error
    ? [["replica " + r.replica + " (" + r.mode + ")", el("span", r.actors_error, "error"), "", age(r.updated_at, data.generated_at)]]
    : r.actors.map((a) => ["replica " + r.replica + " (" + r.mode + ")", a.type, String(a.count), age(r.updated_at, data.generated_at)]));
  fill("actors", table(["replica", "type", "active", "reported"], actorRows));
  fill("jobs", sectionContent(data.jobs_in_flight, ["job", "type", "status", "progress", "created"], (j) => [j.id, j.type, j.status, Math.round(j.progress * 100) + " %", j.created_at]));
  fill("webhooks", sectionContent(data.webhook_failures, ["webhook", "url", "event", "attempt", "status", "error", "at"], (f) => [f.webhook_id, f.url, f.event_type, String(f.attempt), f.response_status === null ? "—" : String(f.response_status), f.error || "", f.created_at]));
  fill("usage", sectionContent(data.usage_today, ["category", "keys", "requests", "cost (USD)"], (u) => [u.category, u.live ? "live" : "test", String(u.requests), u.cost_usd.toFixed(6)]));
  fill("budgets", sectionContent(data.budgets, ["project", "limit (USD)", "spent (USD)", "hard limit"], (b) => [b.project_name, b.monthly_limit_usd.toFixed(2), b.spent_usd.toFixed(6), b.hard_limit ? "yes" : "no"]));
  fill("traffic", renderTraffic(data.traffic));
  fill("key-use", sectionContent(data.key_use, ["key", "project", "mode", "requests this minute (rpm)", "tokens this minute (tpm)", "max concurrent", "spent this month (budget)"], (k) => [
    k.name + " (" + k.id + ")", k.project_name, k.live ? "live" : "test",
    limitCell(k.requests_this_minute, k.rate_limit_per_minute), limitCell(k.tokens_this_minute, k.token_limit_per_minute),
    k.max_concurrent === null ? el("span", "no limit", "muted") : String(k.max_concurrent), limitCell(k.spent_this_month_usd, k.monthly_budget_usd, "usd")]));
  const select = $("log-project");
  const chosen = select.value;
  if (select.options.length !== data.projects.length || [...select.options].some((o, i) => o.value !== data.projects[i].id)) {
    select.replaceChildren(...data.projects.map((p) => {
      const option = el("option", p.name);
      option.value = p.id;
      option.selected = p.id === chosen;
      return option;
    }));
  }
}

async function refresh() {
  const res = await fetch("/console/data.json" + (selectedOrg ? "?org=" + encodeURIComponent(selectedOrg) : ""), { credentials: "same-origin" });
  const body = await res.json().catch(() => ({}));
  $("error").hidden = true;
  if (res.status === 401) {
    $("login").hidden = false;
    $("panels").hidden = true;
    $("meta").textContent = "signed out";
    return;
  }
  if (!res.ok) {
    $("error").textContent = (body.error && body.error.message) || ("HTTP " + res.status);
    $("error").hidden = false;
    $("panels").hidden = true;
    return;
  }
  $("login").hidden = true;
  $("panels").hidden = false;
  render(body);
  document.body.dataset.loaded = "true";
}

function loop() {
  refresh().catch((e) => {
    $("error").textContent = String(e);
    $("error").hidden = false;
  }).finally(() => setTimeout(loop, refreshMs));
}

$("org").addEventListener("change", (e) => {
  selectedOrg = e.target.value;
  history.replaceState(null, "", "?org=" + encodeURIComponent(selectedOrg));
  refresh();
});

$("login").addEventListener("submit", async (e) => {
  e.preventDefault();
  const res = await fetch("/v1/auth/login", {
    method: "POST",
    headers: { "content-type": "application/json" },
    credentials: "same-origin",
    body: JSON.stringify({ email: $("email").value, password: $("password").value }),
  });
  if (!res.ok) {
    const body = await res.json().catch(() => ({}));
    $("login-error").textContent = (body.error && body.error.message) || ("HTTP " + res.status);
    return;
  }
  $("login-error").textContent = "";
  refresh();
});

$("log-filters").addEventListener("submit", (e) => {
  e.preventDefault();
  logAfter = null;
  loadLog(false);
});
$("log-next").addEventListener("click", () => loadLog(true));

loop();
`;
