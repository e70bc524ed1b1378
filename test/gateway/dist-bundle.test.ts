// `npm start` runs the esbuild bundle in .dist/, not the sources the other
// tests run. What the bundle loads by file rather than by import — the
// embedded ledger's worker thread — is checked here over HTTP: a budget
// written and read back, and the usage API, both answered by that thread.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { freePort, waitFor } from "../support/net.ts";
import { repoDir } from "../support/dapr-cluster.ts";
import { field, request, signup } from "../support/troupe.ts";
import { embeddedEnv } from "../support/gateway-process.ts";

t.setTimeout(120_000);

const build = spawnSync(process.execPath, [join(repoDir, "scripts/build-dist.ts")], { cwd: repoDir, encoding: "utf8" });
t.equal(build.status, 0, `the bundle builds: ${build.stderr}`);

const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const child = spawn(process.execPath, [join(repoDir, ".dist/main.mjs")], {
  cwd: repoDir,
  env: { ...embeddedEnv(), NODE_OPTIONS: "", PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "warn", TROUPE_DATA_DIR: mkdtempSync(join(tmpdir(), "troupe-dist-")) },
  stdio: ["ignore", "pipe", "pipe"],
});
let log = "";
child.stdout.on("data", (chunk: Buffer) => (log += chunk.toString()));
child.stderr.on("data", (chunk: Buffer) => (log += chunk.toString()));
t.teardown(() => void child.kill("SIGKILL"));
await waitFor(async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200, 30_000, "the bundled gateway ready");

t.test("the bundle's ledger thread answers budgets and usage", async (t) => {
  const user = await signup({ request: (method, path, opts) => request(base, method, path, opts) }, "dist");
  const budget = { monthly_limit_usd: 25, alert_thresholds: [0.5, 1], hard_limit: true };
  const put = await request(base, "PUT", `/v1/projects/${user.projectId}/budget`, { token: user.token, headers: { "x-csrf-token": user.csrf }, body: budget });
  t.equal(put.status, 200, put.text);
  const read = await request(base, "GET", `/v1/projects/${user.projectId}/budget`, { token: user.token });
  t.equal(field(read.body, "monthly_limit_usd"), 25, read.text);
  const usage = await request(base, "GET", `/v1/projects/${user.projectId}/usage`, { token: user.token });
  t.equal(usage.status, 200, usage.text);
  t.notMatch(log, /ledger|worker/i, "nothing logged about the ledger or its thread");
});
