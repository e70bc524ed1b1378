// A second Troupe started on a port already in use must refuse to start,
// naming the port. uWS binds with SO_REUSEPORT by default, so before the
// fix the second one started silently and the kernel split the traffic.
// The same holds for the metrics port: a second Troupe with the
// same METRICS_PORT started and shared it, each scrape seeing either one.
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { freePort } from "../support/net.ts";
import { startTestTroupe } from "../support/troupe.ts";
import { embeddedEnv } from "../support/gateway-process.ts";

// An explicit port: Linux never shares a port it picked itself (PORT=0),
// with or without SO_REUSEPORT, so only an explicit one shows the split.
const metricsPort = await freePort();
const first = await startTestTroupe({ PORT: String(await freePort()), METRICS_PORT: String(metricsPort), METRICS_HOST: "127.0.0.1" });
t.teardown(() => first.stop());
t.setTimeout(60_000);

/** Runs a second Troupe (gateway/main.ts) with `env`; its exit code and everything it printed. */
async function runSecond(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const main = join(import.meta.dirname, "../../gateway/main.ts");
  const fullEnv = { ...embeddedEnv(), HOST: "127.0.0.1", LOG_LEVEL: "error", TROUPE_DATA_DIR: mkdtempSync(join(tmpdir(), "troupe-second-")), ...env };
  const child = spawn(process.execPath, [main], { env: fullEnv, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr.on("data", (d: Buffer) => (output += d.toString()));
  // A second that started would keep running: give it 20 s, then kill it and fail.
  const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
  const code = await new Promise<number | null>((resolve) => child.on("exit", (c) => resolve(c)));
  clearTimeout(timer);
  return { code, output };
}

t.test("the second process exits non-zero naming the port", async (t) => {
  const { code, output } = await runSecond({ PORT: String(first.port) });
  t.equal(code, 1, `exit code (output: ${output.slice(0, 300)})`);
  t.match(output, new RegExp(`port ${first.port}\\b.*in use`), "the message names the port");
  t.equal((await first.request("GET", "/healthz")).status, 200, "the first keeps serving");
});

t.test("a second process with the same METRICS_PORT exits non-zero naming the metrics port", async (t) => {
  const { code, output } = await runSecond({ PORT: String(await freePort()), METRICS_PORT: String(metricsPort), METRICS_HOST: "127.0.0.1" });
  t.equal(code, 1, `exit code (output: ${output.slice(0, 300)})`);
  t.match(output, new RegExp(`port ${metricsPort}\\b.*METRICS_PORT.*in use`), "the message names the metrics port");
  const scrape = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
  t.equal(scrape.status, 200, "the first keeps serving its metrics");
  t.match(await scrape.text(), /# TYPE/);
});
