// The HTML report opened in headless Chromium (Debian's, through
// playwright-core) with every request recorded: the page loads nothing but
// itself (no CDN, no font, no beacon; the Content-Security-Policy would
// refuse them, and any refusal is caught too), shows both charts, the
// percentile table, the errors by code and the ten slowest request ids. A
// screenshot is left in test-artifacts/ for a human to look at.
import { mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium } from "playwright-core";
import t from "tap";
import { reportSchema } from "../../load/report.ts";
import { sampleValue } from "../support/prometheus-text.ts";
import { signup, str } from "../support/troupe.ts";
import { metrics, runCli, troupeWithKey } from "./load-support.ts";

t.setTimeout(60_000);
const { troupe, url } = await troupeWithKey();
t.teardown(() => troupe.stop());

t.test("the HTML report is one self-contained file", async (t) => {
  // A key with a small per-minute limit, so the run has 429s to report.
  const limited = await limitedKey();
  const dir = mkdtempSync(join(tmpdir(), "troupe-load-html-"));
  const html = join(dir, "report.html");
  const json = join(dir, "report.json");
  const refusalsBefore = sampleValue(await metrics(troupe), "troupe_rate_limit_refusals_total");
  const run = await runCli(["--url", url, "--key", limited, "--rate", "25", "--duration", "2", "--html", html, "--json", json, "--quiet"]);
  t.equal(run.code, 0, run.stderr);
  const report = reportSchema.parse(JSON.parse(readFileSync(json, "utf8")));
  const refused = report.errors_by_code["429 rate_limited"] ?? 0;
  t.ok(refused > 0, `${refused} requests refused with 429 rate_limited`);
  t.equal(sampleValue(await metrics(troupe), "troupe_rate_limit_refusals_total") - refusalsBefore, refused, "Troupe counted the same refusals");

  const browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-default-apps", "--disable-sync", "--no-first-run"],
  });
  t.teardown(() => browser.close());
  const context = await browser.newContext({ viewport: { width: 900, height: 1400 } });
  const requested: string[] = [];
  await context.route("**/*", (route) => {
    requested.push(route.request().url());
    return route.continue();
  });
  context.on("request", (request) => void requested.push(request.url()));
  const page = await context.newPage();
  // Browser-side code as text: the project compiles without the DOM types.
  await page.addInitScript({ content: `window.violations = []; document.addEventListener("securitypolicyviolation", (e) => window.violations.push(e.blockedURI));` });
  const fileUrl = pathToFileURL(html).href;
  await page.goto(fileUrl, { waitUntil: "load" });
  await page.waitForTimeout(300);

  t.ok(requested.length > 0, "the interception saw the page itself");
  t.same([...new Set(requested)], [fileUrl], "the only request is the file itself");
  t.same(await page.evaluate("window.violations"), [], "nothing was blocked by the CSP either");

  t.equal(await page.locator("svg").count(), 2, "latency and throughput charts");
  t.ok((await page.locator("svg path").count()) >= 4, "p50, p99, ok and errors lines");
  t.match(await page.locator("#percentiles").innerText(), /chat\.completions/);
  t.match(await page.locator("#errors").innerText(), /429 rate_limited/);
  const ids = await page.locator("#slowest code.rid").allInnerTexts();
  t.same(ids, report.slowest.map((s) => s.request_id), "the slowest calls' request ids, slowest first");

  const artifacts = join(import.meta.dirname, "..", "..", "test-artifacts");
  mkdirSync(artifacts, { recursive: true });
  const shot = join(artifacts, "load-report.png");
  await page.screenshot({ path: shot, fullPage: true });
  t.comment(`screenshot: ${shot}`);
});

/** A key limited to 30 requests a minute, in a fresh account. */
async function limitedKey(): Promise<string> {
  const user = await signup(troupe, "load-limited");
  const res = await troupe.request("POST", `/v1/environments/${user.developmentEnvId}/api-keys`, { token: user.token, body: { name: "limited", rate_limit_per_minute: 30 } });
  return str(res.body, "key");
}
