// The driver as a user runs it (a child process), chat at a fixed rate
// against an embedded Troupe: the reports exist and match their schema,
// every scheduled request was sent, the counts agree with Troupe's own
// /metrics, and the slowest calls' ids are ids Troupe billed.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { reportSchema } from "../../load/report.ts";
import { sampleValue } from "../support/prometheus-text.ts";
import { metrics, runCli, troupeWithKey } from "./load-support.ts";

t.setTimeout(60_000);
const { troupe, url, key, billedRequestIds } = await troupeWithKey();
t.teardown(() => troupe.stop());
const dir = mkdtempSync(join(tmpdir(), "troupe-load-chat-"));
const route = { method: "POST", route: "/v1/chat/completions" };

t.test("chat at 40/s for 2 s: reports, counts and request ids", async (t) => {
  const before = sampleValue(await metrics(troupe), "troupe_http_request_duration_seconds_count", route);
  const json = join(dir, "chat.json");
  const html = join(dir, "chat.html");
  const run = await runCli(["--url", url, "--key", key, "--scenario", "chat", "--rate", "40", "--duration", "2", "--json", json, "--html", html]);
  t.equal(run.code, 0, run.stderr);
  t.equal(run.stderr, "", "no progress line when stderr is not a terminal");
  t.match(run.stdout, /troupe-load chat \(simulated-chat\)/);
  t.match(run.stdout, /slowest \(X-Request-Id\):/);

  const report = reportSchema.parse(JSON.parse(readFileSync(json, "utf8")));
  t.equal(report.mode, "open");
  t.equal(report.requests, 80, "open loop: rate × duration requests were sent, whatever the latency");
  t.equal(report.errors, 0, JSON.stringify(report.error_examples));
  t.equal(report.latency_ms.by_operation["chat.completions"]?.count, 80);
  t.equal(report.per_second.reduce((n, s) => n + s.ok + s.errors, 0), report.requests, "the per-second buckets hold every request");

  const after = await metrics(troupe);
  t.equal(sampleValue(after, "troupe_http_request_duration_seconds_count", route) - before, report.requests, "Troupe counted as many chat requests as the driver sent");
  t.equal(sampleValue(after, "troupe_http_request_duration_seconds_count", { ...route, status: "200" }) - before, report.ok, "and as many 200s as it reports ok");

  t.equal(report.slowest.length, 10);
  const latencies = report.slowest.map((s) => s.latency_ms);
  t.same(latencies, [...latencies].sort((a, b) => b - a), "slowest first");
  t.ok((latencies.at(-1) ?? 0) >= (report.latency_ms.all.p50 ?? Infinity), "the slowest ten are at least the median");
  for (const s of report.slowest) t.ok(s.request_id && billedRequestIds.has(s.request_id), `${s.request_id} is a request Troupe billed`);
  t.match(readFileSync(html, "utf8"), /^<!doctype html>/);
});

t.test("a bad flag is refused before any request, naming the flag", async (t) => {
  const before = sampleValue(await metrics(troupe), "troupe_http_request_duration_seconds_count");
  const run = await runCli(["--url", url, "--key", key, "--rate", "0"]);
  t.equal(run.code, 2);
  t.match(run.stderr, /--rate must be greater than 0/);
  const both = await runCli(["--url", url, "--key", key, "--rate", "5", "--concurrency", "2"]);
  t.equal(both.code, 2);
  t.match(both.stderr, /exactly one of --rate .* or --concurrency/);
  const unknown = await runCli(["--url", url, "--key", key, "--rate", "5", "--sceanrio", "chat"]);
  t.match(unknown.stderr, /unknown flag --sceanrio/);
  t.equal(sampleValue(await metrics(troupe), "troupe_http_request_duration_seconds_count"), before, "nothing reached Troupe");
});

t.test("preflight: an unknown model or a wrong key stops the run with exit 1", async (t) => {
  const model = await runCli(["--url", url, "--key", key, "--rate", "5", "--duration", "1", "--model", "no-such-model"]);
  t.equal(model.code, 1);
  t.match(model.stderr, /--model no-such-model is not in the catalogue/);
  const wrongKey = await runCli(["--url", url, "--key", "trp_test_nope", "--rate", "5", "--duration", "1"]);
  t.equal(wrongKey.code, 1);
  t.match(wrongKey.stderr, /--key was refused/);
});
