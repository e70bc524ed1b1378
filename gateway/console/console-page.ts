// The operator's console: one static HTML page and one script, no framework,
// nothing from a CDN. The script reads /console/data.json with the session
// cookie every 5 s and renders it with textContent (never HTML from data);
// without a session it shows a login form that posts to /v1/auth/login,
// which sets the cookie.

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

loop();
`;
