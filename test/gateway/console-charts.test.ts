// The console's traffic charts, key limits and request log in Chromium
// (Debian's, driven by playwright-core) over a seeded history: 20 hours of
// calls written into the request log's store before Troupe starts on that
// data directory. Each chart point's data-* value equals the aggregate it was
// drawn from (/console/data.json) and the count of the seeded calls in its
// hour; the request log section filters through the API. Screenshots go to
// test-artifacts/.
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { chromium } from "playwright-core";
import type { ConsoleData } from "../../gateway/console/console-data.ts";
import { bucketStart } from "../../tenancy/request-log-aggregates.ts";
import type { RequestLogEntry } from "../../tenancy/request-log-entry.ts";
import { RequestLogStore } from "../../tenancy/request-log-store.ts";
import { repoDir } from "../support/dapr-cluster.ts";
import { field, signup, startTestTroupe, str } from "../support/troupe.ts";

t.setTimeout(120_000);
const artifacts = join(repoDir, "test-artifacts");
mkdirSync(artifacts, { recursive: true });
const dataDir = mkdtempSync(join(tmpdir(), "troupe-console-charts-"));
const env = { TROUPE_DATA_DIR: dataDir };

// First run: the accounts the history belongs to.
const first = await startTestTroupe(env);
const owner = await signup(first, "charts-owner");
const second = await first.request("POST", `/v1/orgs/${owner.orgId}/projects`, { token: owner.token, body: { name: "second" } });
const secondProjectId = str(second.body, "project", "id");
const key = await first.request("POST", `/v1/environments/${owner.productionEnvId}/api-keys`, { token: owner.token, body: { name: "charted", live: true, rate_limit_per_minute: 120, token_limit_per_minute: 10_000 } });
const keyId = str(key.body, "id");
await first.stop();

// The history: hour h ago holds 1 + (7h mod 11) calls in the first project and h mod 3 in the second;
// every 4th call fails upstream (502), latencies spread over the histogram, 3 calls in this minute.
// "This minute" must still be the seeded minute when the page reads it: never seed in a minute's last 20 s.
if (Date.now() % 60_000 > 40_000) await new Promise((r) => setTimeout(r, 60_000 - (Date.now() % 60_000) + 1_000));
const nowMs = Date.now();
const hour = 3_600_000;
const seeded: RequestLogEntry[] = [];
let n = 0;
const call = (projectId: string, createdMs: number): RequestLogEntry => {
  n += 1;
  const failed = n % 4 === 0;
  return {
    request_id: `req_seed_${n}`,
    created_ms: createdMs,
    organization_id: owner.orgId,
    project_id: projectId,
    environment_id: owner.productionEnvId,
    api_key_id: keyId,
    live: true,
    method: "POST",
    route: "/v1/chat/completions",
    model: "gpt-4.1-mini",
    provider: failed ? null : "openai",
    deployment: null,
    status: failed ? 502 : 200,
    error_code: failed ? "provider_error" : null,
    latency_ms: 30 + ((n * 137) % 2000),
    ttfb_ms: 12,
    input_tokens: failed ? 0 : 20,
    output_tokens: failed ? 0 : 10,
    cached_input_tokens: 0,
    cost_nanos: failed ? 0 : 25_000 * (1 + (n % 5)),
    cache: null,
    byok: null,
  };
};
for (let h = 19; h >= 1; h--) {
  for (let i = 0; i < 1 + ((7 * h) % 11); i++) seeded.push(call(owner.projectId, nowMs - h * hour + i * 1000));
  for (let i = 0; i < h % 3; i++) seeded.push(call(secondProjectId, nowMs - h * hour + i * 1000));
}
for (let i = 0; i < 3; i++) seeded.push(call(owner.projectId, nowMs - 100 - i));
const seedStore = new RequestLogStore(dataDir, { now: () => nowMs }, { retentionMs: 7 * 24 * hour, maxEntries: 1_000_000 });
await seedStore.append(seeded);
await seedStore.close();

const troupe = await startTestTroupe(env);
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
t.teardown(async () => {
  await browser.close();
  await troupe.stop();
});

/** Seeded calls per hour bucket of one project. */
function seededCounts(projectId: string, pick: (e: RequestLogEntry) => boolean = () => true): Map<string, number> {
  const counts = new Map<string, number>();
  for (const e of seeded.filter((e) => e.project_id === projectId && pick(e))) {
    const start = new Date(bucketStart(e.created_ms, "hour")).toISOString();
    counts.set(start, (counts.get(start) ?? 0) + 1);
  }
  return counts;
}

t.test("Chromium: the charts' points are the counters they were drawn from", async (t) => {
  const data = (await troupe.request("GET", "/console/data.json", { token: owner.token })).body as ConsoleData;
  t.ok(data.traffic.available, "the traffic section is wired");
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("request", (r) => {
    if (!r.url().startsWith(`http://127.0.0.1:${troupe.port}/`)) errors.push(`a request left the origin: ${r.url()}`);
  });
  await page.goto(`http://127.0.0.1:${troupe.port}/console`);
  await page.locator("#login").waitFor({ state: "visible" });
  await page.fill("#email", owner.email);
  await page.fill("#password", "correct horse battery");
  await page.click("#login button[type=submit]");
  await page.locator("body[data-loaded=true]").waitFor({ state: "attached", timeout: 15_000 });
  await page.locator("#traffic svg.chart").first().waitFor();
  t.equal(await page.locator("#traffic .charts").count(), 3, "the organization and its two projects");

  const pointsOf = (scopeId: string, chartTitle: string, series: string) =>
    page.$$eval(`#traffic .charts[data-id="${scopeId}"] svg[data-chart="${chartTitle}"] [data-series="${series}"][data-start]`, (nodes) =>
      nodes.map((n) => [n.getAttribute("data-start") ?? "", Number(n.getAttribute("data-value"))] as [string, number]),
    );
  if (!data.traffic.available) return;
  for (const series of data.traffic.rows) {
    const drawn = await pointsOf(series.id, "Requests and errors", "requests");
    t.same(drawn, series.points.map((p) => [new Date(p.start_ms).toISOString(), p.requests]), `${series.scope} ${series.name}: requests as counted`);
    const errorsDrawn = await pointsOf(series.id, "Requests and errors", "errors");
    t.same(errorsDrawn, series.points.map((p) => [new Date(p.start_ms).toISOString(), p.errors]), `${series.name}: errors as counted`);
    const p99 = await pointsOf(series.id, "Latency", "p99_ms");
    t.same(p99, series.points.filter((p) => p.p99_ms !== null).map((p) => [new Date(p.start_ms).toISOString(), p.p99_ms]), `${series.name}: p99 as counted`);
    const spend = await pointsOf(series.id, "Spend", "spend_usd");
    t.same(spend, series.points.map((p) => [new Date(p.start_ms).toISOString(), p.spend_usd]), `${series.name}: spend as counted`);
  }
  // And the counters are the seeded calls.
  for (const projectId of [owner.projectId, secondProjectId]) {
    const drawn = new Map((await pointsOf(projectId, "Requests and errors", "requests")).filter(([, v]) => v > 0));
    t.same(drawn, seededCounts(projectId), `project ${projectId}: one point per seeded hour, its calls counted`);
    const drawnErrors = new Map((await pointsOf(projectId, "Requests and errors", "errors")).filter(([, v]) => v > 0));
    t.same(drawnErrors, seededCounts(projectId, (e) => e.status >= 400), "its failed calls counted");
  }
  // The row and the time it was computed at are read together (the page refreshes every 5 s): under
  // load the minute the calls were seeded in may be over by now, and then this minute holds none.
  const { keyRow, generatedAt } = await page.$eval("body", (body) => ({
    keyRow: [...body.querySelectorAll("#key-use tr")].slice(1).map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent ?? "")),
    generatedAt: / at (\S+) /.exec(body.querySelector("#meta")?.textContent ?? "")?.[1] ?? "",
  }));
  const charted = keyRow.find((r) => r[0]?.includes(keyId));
  const minuteStart = bucketStart(Date.parse(generatedAt), "minute");
  const thisMinute = seeded.filter((e) => e.created_ms >= minuteStart && e.created_ms < minuteStart + 60_000);
  t.ok(Number.isFinite(minuteStart), `the page says when its data was computed (${generatedAt})`);
  const requestsThisMinute = thisMinute.length;
  t.equal(charted?.[3], `${requestsThisMinute} of 120 (${Math.round((requestsThisMinute * 100) / 120)} %)`, "this minute's requests against the key's rpm");
  const tokensThisMinute = thisMinute.reduce((sum, e) => sum + e.input_tokens + e.output_tokens, 0);
  t.equal(charted?.[4]?.split(" ")[0], String(tokensThisMinute), "this minute's tokens against its tpm");
  t.match(charted?.[4], / of 10000 /);
  await page.screenshot({ path: join(artifacts, "console-charts.png"), fullPage: true });

  await page.selectOption("#log-project", owner.projectId);
  await page.fill("#log-status", "502");
  await page.click("#log-filters button[type=submit]");
  await page.locator("#log[data-loaded=true]").waitFor();
  const rows = await page.$$eval("#log tr", (trs) => trs.slice(1).map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent ?? "")));
  const failedSeeded = seeded.filter((e) => e.project_id === owner.projectId && e.status === 502).sort((a, b) => b.created_ms - a.created_ms);
  t.same(rows.slice(0, 25).map((r) => r[1]), failedSeeded.slice(0, 25).map((e) => e.request_id), "the 502s, newest first");
  t.ok(rows.every((r) => r[6] === "502" && r[7] === "provider_error"));
  if (failedSeeded.length > 25) {
    await page.click("#log-next");
    await page.locator("#log tr").nth(26).waitFor();
    t.equal(await page.locator("#log tr").count(), Math.min(failedSeeded.length, 50) + 1, "the next page appended");
  }
  await page.screenshot({ path: join(artifacts, "console-request-log.png"), fullPage: true });
  t.same(errors, [], "no script error, nothing fetched from elsewhere");
  t.equal(field(data, "projects", "length"), 2);
  await page.close();
});
