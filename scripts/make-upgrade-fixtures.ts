// Writes the upgrade fixtures (test/fixtures/upgrade/): the data a Troupe
// release leaves behind, for test/ops/upgrade-fixtures.test.ts to open with
// the current code. Two fixtures, filled the same way over HTTP (an account,
// a named API key, a chat call, an agent conversation with a turn, a webhook,
// a completed video job on the simulated provider and its delivery):
//   embedded.tar.gz  the TROUPE_DATA_DIR of an embedded Troupe
//   dump.rdb         the Redis of a one-replica distributed Troupe (Dapr
//                    actors, Redis data store and ledger), saved with SAVE
// plus manifest.json (what was written: ids, the key, the expected counts).
//
//   node scripts/make-upgrade-fixtures.ts [--source <checkout>] [--out <dir>]
//
// --source is the checkout whose code writes the data (default: this one);
// to record an older release: `git worktree add /tmp/old <commit>`, copy
// node_modules into it, link its dapr/.bin (npm run dapr:build there) and
// pass --source /tmp/old. The script itself uses only Node and redis-cli.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { freePort } from "../test/support/net.ts";

const repo = resolve(import.meta.dirname, "..");
const { values: args } = parseArgs({ options: { source: { type: "string" }, out: { type: "string" } } });
const source = resolve(args.source ?? repo);
const out = resolve(args.out ?? join(repo, "test/fixtures/upgrade"));
/** Fixed so the distributed fixture's sealed webhook secret opens again (the test passes the same key). */
export const fixtureWebhookKey = Buffer.alloc(32, 7).toString("base64");
const say = (line: string) => process.stderr.write(`fixtures: ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function call(base: string, method: string, path: string, token?: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const headers: Record<string, string> = {};
  if (token) headers["authorization"] = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

function expect(what: string, answer: { status: number; body: unknown }, status: number): Record<string, unknown> {
  if (answer.status !== status) throw new Error(`${what}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body as Record<string, unknown>;
}

const at = (value: unknown, ...path: (string | number)[]): unknown =>
  path.reduce<unknown>((v, k) => (v !== null && typeof v === "object" ? (v as Record<string | number, unknown>)[k] : undefined), value);

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = await probe();
    if (got !== undefined) return got;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

/** A webhook receiver answering 200, counting deliveries. */
async function receiver(): Promise<{ url: string; received: () => number; close: () => void }> {
  let received = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      received += 1;
      res.end("ok");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no receiver port");
  return { url: `http://127.0.0.1:${address.port}/hook`, received: () => received, close: () => server.close() };
}

export interface FixtureManifest {
  email: string;
  password: string;
  organization_id: string;
  project_id: string;
  development_environment_id: string;
  api_key_id: string;
  api_key: string;
  conversation_id: string;
  conversation_messages: number;
  job_id: string;
  webhook_id: string;
  webhook_deliveries: number;
  usage_test_calls: number;
}

/** Fills a running Troupe with one of everything; returns what the test reads back. */
async function populate(base: string, hookUrl: string, hookReceived: () => number): Promise<FixtureManifest> {
  const email = "fixture-owner@example.test";
  const password = "fixture password one";
  const user = expect("signup", await call(base, "POST", "/v1/auth/signup", undefined, { email, password, name: "Fixture Owner" }), 201);
  const token = String(user["session_token"]);
  const devEnv = String(at(user, "environments", 1, "environment", "id"));
  const projectId = String(at(user, "project", "id"));
  const key = expect("api key", await call(base, "POST", `/v1/environments/${devEnv}/api-keys`, token, { name: "fixture key" }), 201);
  const apiKey = String(key["key"]);
  const chat = { model: "simulated-chat", routing_strategy: "manual", messages: [{ role: "user", content: "hello from the fixture" }] };
  expect("chat", await call(base, "POST", "/v1/chat/completions", apiKey, chat), 200);
  const conversation = expect("conversation", await call(base, "POST", "/v1/agents/conversations", apiKey, { model: "simulated-chat", system_prompt: "You are the fixture." }), 201);
  const conversationId = String(conversation["id"]);
  const turn = expect("turn", await call(base, "POST", `/v1/agents/conversations/${conversationId}/messages`, apiKey, { content: "remember the lighthouse" }), 200);
  const hook = expect("webhook", await call(base, "POST", "/v1/webhooks", apiKey, { url: hookUrl, events: ["job.completed", "job.failed"] }), 201);
  const webhookId = String(at(hook, "webhook", "id"));
  const job = expect("video job", await call(base, "POST", "/v1/video/generate", apiKey, { prompt: "a lighthouse at dusk", duration_seconds: 1, model: "simulated-video", routing_strategy: "manual" }), 202);
  const jobId = String(job["job_id"]);
  await until("the job to complete", async () => {
    const got = await call(base, "GET", `/v1/jobs/${jobId}`, apiKey);
    if (got.body["status"] === "failed") throw new Error(`the fixture job failed: ${JSON.stringify(got.body)}`);
    return got.body["status"] === "completed" ? true : undefined;
  });
  await until("the job.completed delivery", async () => (hookReceived() >= 1 ? true : undefined));
  const deliveries = await until("the delivery record", async () => {
    const list = await call(base, "GET", `/v1/webhooks/${webhookId}/deliveries`, apiKey);
    const data = list.body["data"];
    return Array.isArray(data) && data.length >= 1 && data.every((d) => at(d, "status") === "succeeded") ? data.length : undefined;
  });
  const calls = await until("the usage records", async () => {
    const report = await call(base, "GET", `/v1/projects/${projectId}/usage?group_by=model`, token);
    const n = Number(at(report.body, "test", "calls"));
    return n >= 3 ? n : undefined;
  });
  return {
    email,
    password,
    organization_id: String(at(user, "organization", "id")),
    project_id: projectId,
    development_environment_id: devEnv,
    api_key_id: String(at(key, "api_key", "id") ?? key["id"]),
    api_key: apiKey,
    conversation_id: conversationId,
    conversation_messages: (turn["messages"] as unknown[]).length,
    job_id: jobId,
    webhook_id: webhookId,
    webhook_deliveries: deliveries,
    usage_test_calls: calls,
  };
}

const commonEnv = {
  LOG_LEVEL: "warn",
  // Files and vectors in the data directory, whatever the caller's environment says.
  S3_ENDPOINT: "",
  ELASTICSEARCH_URL: "",
  OUTBOUND_ALLOW_HOSTS: "127.0.0.1",
  SIMULATED_VIDEO_DELAY_MS: "50",
  // Usage is flushed to the ledger well before the process is stopped.
  SHUTDOWN_GRACE_MS: "5000",
};

function stopped(child: ChildProcess): Promise<void> {
  return new Promise((r) => (child.exitCode !== null ? r() : child.once("exit", () => r())));
}

async function embedded(work: string): Promise<FixtureManifest> {
  const dataDir = join(work, "data");
  const port = await freePort();
  const hook = await receiver();
  const child = spawn(process.execPath, [join(source, "gateway/main.ts")], {
    cwd: source,
    env: { ...process.env, ...commonEnv, TROUPE_MODE: "embedded", TROUPE_DATA_DIR: dataDir, HOST: "127.0.0.1", PORT: String(port), REDIS_URL: "", REDIS_CLUSTER_NODES: "" },
    stdio: ["ignore", "inherit", "inherit"],
  });
  try {
    const base = `http://127.0.0.1:${port}`;
    await until("the embedded Troupe", async () => ((await fetch(`${base}/healthz`).catch(() => undefined))?.ok ? true : undefined));
    const manifest = await populate(base, hook.url, hook.received);
    await sleep(1000);
    child.kill("SIGTERM");
    await stopped(child);
    // Compressed: lmdb files are mostly empty pages.
    const tar = spawnSync("tar", ["-czf", join(out, "embedded.tar.gz"), "-C", dataDir, "."], { stdio: "inherit" });
    if (tar.status !== 0) throw new Error("tar failed");
    return manifest;
  } finally {
    hook.close();
    if (child.exitCode === null) child.kill("SIGKILL");
  }
}

async function distributed(work: string): Promise<FixtureManifest> {
  const redisDir = join(work, "redis");
  mkdirSync(redisDir, { recursive: true });
  const redisPort = await freePort();
  const redis = spawn("redis-server", ["--port", String(redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", redisDir], { stdio: "ignore" });
  const hook = await receiver();
  const { LocalCluster } = (await import(join(source, "test/support/dapr-cluster.ts"))) as typeof import("../test/support/dapr-cluster.ts");
  const cluster = new LocalCluster({
    mode: "dapr",
    replicas: 1,
    dataDir: join(work, "cluster"),
    appEntry: join(source, "gateway/main.ts"),
    appEnv: { ...commonEnv, WEBHOOK_SECRET_KEY: fixtureWebhookKey },
    redisUrl: `redis://127.0.0.1:${redisPort}`,
    log: say,
  });
  try {
    await until("redis-server", async () => (spawnSync("redis-cli", ["-p", String(redisPort), "ping"], { encoding: "utf8" }).stdout.trim() === "PONG" ? true : undefined));
    await cluster.start();
    const manifest = await populate(cluster.replicas[0]!.gatewayUrl, hook.url, hook.received);
    await sleep(1000);
    await cluster.stop();
    const saved = spawnSync("redis-cli", ["-p", String(redisPort), "SAVE"], { encoding: "utf8" });
    if (saved.stdout.trim() !== "OK") throw new Error(`redis SAVE: ${saved.stdout}${saved.stderr}`);
    copyFileSync(join(redisDir, "dump.rdb"), join(out, "dump.rdb"));
    return manifest;
  } finally {
    hook.close();
    await cluster.stop().catch(() => {});
    redis.kill("SIGKILL");
  }
}

if (import.meta.main) {
  mkdirSync(out, { recursive: true });
  const work = mkdtempSync(join(tmpdir(), "troupe-fixtures-"));
  const commit = spawnSync("git", ["-C", source, "rev-parse", "HEAD"], { encoding: "utf8" }).stdout.trim();
  const dirty = spawnSync("git", ["-C", source, "status", "--porcelain", "--untracked-files=no"], { encoding: "utf8" }).stdout.trim() !== "";
  say(`writing fixtures with the code of ${source} (${commit}${dirty ? ", with uncommitted changes" : ""}) into ${out}`);
  try {
    const embeddedManifest = await embedded(join(work, "embedded"));
    say("embedded.tar.gz written");
    const redisManifest = await distributed(join(work, "distributed"));
    say("dump.rdb written");
    const manifest = { commit, dirty, written_at: new Date().toISOString(), webhook_secret_key: fixtureWebhookKey, embedded: embeddedManifest, redis: redisManifest };
    writeFileSync(join(out, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
