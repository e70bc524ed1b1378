// The embeddings scenario (closed loop) counted against /metrics, and the
// live progress line: written once a second on a terminal (the driver run
// under script(1), which gives it a pseudo-terminal), absent with --quiet.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import t from "tap";
import { sampleValue } from "../support/prometheus-text.ts";
import { cli, metrics, runCli, troupeWithKey } from "./load-support.ts";

t.setTimeout(60_000);
const { troupe, url, key } = await troupeWithKey();
t.teardown(() => troupe.stop());

t.test("embeddings at a concurrency of 2", async (t) => {
  const route = { method: "POST", route: "/v1/embeddings", status: "200" };
  const before = sampleValue(await metrics(troupe), "troupe_http_request_duration_seconds_count", route);
  const run = await runCli(["--url", url, "--key", key, "--scenario", "embeddings", "--concurrency", "2", "--duration", "1"]);
  t.equal(run.code, 0, run.stderr);
  const ok = Number(/ok (\d+)/.exec(run.stdout)?.[1]);
  t.ok(ok > 0, `${ok} embeddings`);
  t.match(run.stdout, /embeddings \(simulated-embed\)/);
  t.equal(sampleValue(await metrics(troupe), "troupe_http_request_duration_seconds_count", route) - before, ok);
});

/** Runs the driver on a pseudo-terminal; answers what the terminal showed. */
function onTerminal(args: string[]): Promise<string> {
  const command = [process.execPath, cli, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ");
  return new Promise((resolve, reject) => {
    execFile("script", ["-qec", command, "/dev/null"], { encoding: "utf8", timeout: 30_000 }, (error, stdout) => (error ? reject(error) : resolve(stdout)));
  });
}

t.test("the live line on a terminal, and --quiet", { skip: existsSync("/usr/bin/script") ? false : "script(1) not installed" }, async (t) => {
  const args = ["--url", url, "--key", key, "--rate", "20", "--duration", "2.5"];
  const shown = await onTerminal(args);
  t.match(shown, /\[ {2,3}\d\/2\.5s\] +\d+ req\/s {2}p50 [\d.]+ ms {2}p99 [\d.]+ ms {2}errors 0/, "rate, p50/p99 and errors, once a second");
  t.match(shown, /troupe-load chat/, "then the summary");
  const quiet = await onTerminal([...args, "--quiet"]);
  t.notMatch(quiet, /req\/s {2}p50/, "--quiet: no live line");
  t.match(quiet, /troupe-load chat/);
});
