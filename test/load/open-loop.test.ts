// Open loop without coordinated omission. In process: a driver whose event
// loop is held up sends late, and the latency must count that lateness
// (from each request's scheduled time, not from its send). As a user runs
// it: against a Troupe taking 50 ms a call through one connection (20/s at
// most), a 40/s schedule queues up and the report shows the queue. Also the
// ramp-up schedule's arithmetic.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { reportSchema } from "../../load/report.ts";
import type { Answer } from "../../load/client.ts";
import { parseOptions } from "../../load/options.ts";
import { Recorder } from "../../load/recorder.ts";
import { openLoop, scheduledAtMs } from "../../load/runner.ts";
import { iterationFor } from "../../load/scenarios.ts";
import { runCli, troupeWithKey } from "./load-support.ts";

t.setTimeout(60_000);

t.test("the ramp-up climbs linearly to the rate, then holds it", async (t) => {
  // 100/s after a 2 s ramp: 100 requests in the ramp (100·2/2), the 100th at 2 s.
  t.equal(scheduledAtMs(0, 100, 2), 0);
  t.equal(Math.round(scheduledAtMs(25, 100, 2)), 1000, "a quarter of the ramp's requests by half its time");
  t.equal(Math.round(scheduledAtMs(100, 100, 2)), 2000);
  t.equal(Math.round(scheduledAtMs(200, 100, 2)), 3000, "then 100 a second");
  t.equal(scheduledAtMs(7, 50, 0), 140, "no ramp: i / rate");
});

t.test("requests sent late because the driver stalled are timed from their schedule", async (t) => {
  const options = parseOptions(["--url", "http://127.0.0.1:1", "--key", "k", "--rate", "100", "--duration", "0.5"]);
  let calls = 0;
  const client = {
    call: async (): Promise<Answer> => {
      // The first call holds the event loop for 200 ms: the 20 requests due meanwhile leave late.
      if (calls++ === 0) for (const until = performance.now() + 200; performance.now() < until; );
      return { status: 200, code: undefined, message: undefined, requestId: `req_${calls}`, body: {} };
    },
  };
  const recorder = new Recorder();
  await openLoop({ client, recorder, iteration: iterationFor(options), options, startedAt: performance.now() }, 100);
  t.equal(recorder.ok, 50);
  const latencies = (recorder.byOp.get("chat.completions") ?? []).sort((a, b) => b - a);
  t.ok((latencies[10] ?? 0) >= 80, `the eleventh slowest waited ${latencies[10]} ms behind the stall: it counts`);
});

t.test("a Troupe that falls behind the schedule shows it in the latency", async (t) => {
  const { troupe, url, key } = await troupeWithKey({ SIMULATED_LATENCY_MS: "50" });
  t.teardown(() => troupe.stop());
  const json = join(mkdtempSync(join(tmpdir(), "troupe-load-open-")), "open.json");
  const run = await runCli(["--url", url, "--key", key, "--rate", "40", "--duration", "2", "--connections", "1", "--json", json]);
  t.equal(run.code, 0, run.stderr);
  const report = reportSchema.parse(JSON.parse(readFileSync(json, "utf8")));
  t.equal(report.requests, 80, "every scheduled request was sent, however late");
  t.ok(report.elapsed_s >= 3.5, `the queue took ${report.elapsed_s} s to drain`);
  t.ok((report.latency_ms.all.p99 ?? 0) >= 1500, `p99 ${report.latency_ms.all.p99} ms counts the time spent waiting behind the stall`);
  t.ok((report.scheduler_lag_ms.p50 ?? Infinity) < 5, `while the driver itself kept its schedule (lag p50 ${report.scheduler_lag_ms.p50} ms): the wait was Troupe's`);
});

t.test("no answer in time is an error by its network code; no Troupe at all stops the run", async (t) => {
  const { troupe, url, key } = await troupeWithKey({ SIMULATED_LATENCY_MS: "3000" });
  t.teardown(() => troupe.stop());
  const dir = mkdtempSync(join(tmpdir(), "troupe-load-timeout-"));
  const json = join(dir, "timeout.json");
  const html = join(dir, "timeout.html");
  const run = await runCli(["--url", url, "--key", key, "--rate", "5", "--duration", "1", "--timeout", "1", "--json", json, "--html", html]);
  t.equal(run.code, 0, run.stderr);
  const report = reportSchema.parse(JSON.parse(readFileSync(json, "utf8")));
  t.same(report.errors_by_code, { "network UND_ERR_HEADERS_TIMEOUT": 5 }, "every call timed out (the model answers after 3 s)");
  t.match(report.error_examples["network UND_ERR_HEADERS_TIMEOUT"], /^chat\.completions: /);
  t.match(run.stdout, /network UND_ERR_HEADERS_TIMEOUT +5/);
  t.equal(report.latency_ms.all.p50, null, "no success: no percentile (null, not NaN)");
  t.match(readFileSync(html, "utf8"), /<td>network UND_ERR_HEADERS_TIMEOUT<\/td><td>5<\/td>/, "a run with no success still makes its HTML report");

  const closedPort = await runCli(["--url", "http://127.0.0.1:9", "--key", key, "--rate", "10", "--duration", "1"]);
  t.equal(closedPort.code, 1);
  t.match(closedPort.stderr, /--url http:\/\/127\.0\.0\.1:9: no answer \(ECONNREFUSED\)/);
});
