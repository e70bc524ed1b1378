// Upgrades keep data (docs/operations/upgrades.md): the fixtures an earlier
// release wrote (test/fixtures/upgrade/, see its README for the commit) are
// opened with this code and read back over HTTP. Embedded: the data directory
// copied to a temporary one and a Troupe started on it. Distributed: the
// Redis dump loaded into a fresh redis-server on a free port and a
// one-replica Dapr Troupe started against it. Either way: the password logs
// in, the key authenticates, the conversation lists its messages and answers
// a new turn, the job reads as completed with its result, the webhook and its
// delivery are listed, and the usage report counts the records.
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import type { FixtureManifest } from "../../scripts/make-upgrade-fixtures.ts";
import { LocalCluster, repoDir, requireDaprPrerequisites } from "../support/dapr-cluster.ts";
import { freePort, waitFor } from "../support/net.ts";
import { field, request, startTestTroupe, str, type RequestOptions, type TestResponse } from "../support/troupe.ts";

t.setTimeout(180_000);
const fixtures = join(repoDir, "test/fixtures/upgrade");
const manifest = JSON.parse(readFileSync(join(fixtures, "manifest.json"), "utf8")) as {
  commit: string;
  written_at: string;
  webhook_secret_key: string;
  embedded: FixtureManifest;
  redis: FixtureManifest;
};
/** A failed answer's body, for the assertion message; nothing when it succeeded. */
const failed = (res: TestResponse) => (res.status < 300 ? "" : ` ${res.status} ${res.text}`);
type Call = (method: string, path: string, options?: RequestOptions) => Promise<TestResponse>;

/** Everything the fixture holds, read back with this code over HTTP. */
async function readsBack(t: Test, call: Call, m: FixtureManifest, mode: "embedded" | "redis"): Promise<void> {
  const login = await call("POST", "/v1/auth/login", { body: { email: m.email, password: m.password } });
  t.equal(login.status, 200, `login${failed(login)}`);
  const token = str(login.body, "session_token");
  const account = await call("GET", "/v1/account", { token });
  t.equal(field(account.body, "memberships", 0, "organization", "id"), m.organization_id, "the account's organization");

  const models = await call("GET", "/v1/models", { token: m.api_key });
  t.equal(models.status, 200, `the stored key authenticates${failed(models)}`);
  const keys = await call("GET", `/v1/environments/${m.development_environment_id}/api-keys`, { token });
  t.ok((field(keys.body, "data") as unknown[]).some((k) => field(k, "id") === m.api_key_id), "the key is listed");

  // The days the fixture was written (the default range is this month, which moves on).
  const written = Date.parse(manifest.written_at);
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  const range = `from=${day(written - 86_400_000)}&to=${day(written)}`;
  const usage = await call("GET", `/v1/projects/${m.project_id}/usage?group_by=model&${range}`, { token });
  t.equal(usage.status, 200, `the usage report${failed(usage)}`);
  t.equal(Number(field(usage.body, "test", "calls")), m.usage_test_calls, "the usage report counts every stored record");

  const conversation = await call("GET", `/v1/agents/conversations/${m.conversation_id}`, { token: m.api_key });
  t.equal(conversation.status, 200, `the conversation reads${failed(conversation)}`);
  t.equal((field(conversation.body, "messages") as unknown[] | undefined)?.length, m.conversation_messages, "with its messages");
  const listed = await call("GET", "/v1/agents/conversations", { token: m.api_key });
  t.ok((field(listed.body, "data") as unknown[]).some((c) => field(c, "id") === m.conversation_id), "and is listed");
  const turn = await call("POST", `/v1/agents/conversations/${m.conversation_id}/messages`, { token: m.api_key, body: { content: "still there?" } });
  t.equal(turn.status, 200, `a new turn is answered${failed(turn)}`);
  t.equal((field(turn.body, "messages") as unknown[] | undefined)?.length, m.conversation_messages + 2, "after the stored messages");

  const job = await call("GET", `/v1/jobs/${m.job_id}`, { token: m.api_key });
  t.equal(job.status, 200, `the job reads${failed(job)}`);
  t.equal(field(job.body, "status"), "completed", "the job reads as completed");
  const resultUrl = field(job.body, "result_url");
  t.type(resultUrl, "string", "with its result");
  if (mode === "embedded") {
    // The embedded fixture holds the files too (the distributed one keeps them in S3, not in the dump).
    // The stored URL names the port the writing Troupe listened on: its path is asked of this one.
    const video = await call("GET", new URL(String(resultUrl)).pathname, { token: m.api_key });
    t.equal(video.status, 200, "the result video is served, its file metadata read");
    t.ok(video.text.length > 1000, "with its bytes");
  }
  // GET reads the job's snapshot in the data store; a cancel asks its JobActor, whose stored state says completed.
  const cancel = await call("POST", `/v1/jobs/${m.job_id}/cancel`, { token: m.api_key });
  t.equal(cancel.status, 409, `the JobActor's state reads: a completed job is not cancelled (${cancel.status} ${cancel.text})`);
  t.match(field(cancel.body, "error", "message"), /already completed/);
  const jobs = await call("GET", "/v1/jobs", { token: m.api_key });
  t.ok((field(jobs.body, "data") as unknown[]).some((j) => field(j, "id") === m.job_id), "the job is listed");

  const hooks = await call("GET", "/v1/webhooks", { token: m.api_key });
  t.ok((field(hooks.body, "data") as unknown[]).some((h) => field(h, "id") === m.webhook_id), `the webhook is listed${failed(hooks)}`);
  const deliveries = await call("GET", `/v1/webhooks/${m.webhook_id}/deliveries`, { token: m.api_key });
  t.equal((field(deliveries.body, "data") as unknown[] | undefined)?.length, m.webhook_deliveries, `with its deliveries${failed(deliveries)}`);
  const hook = await call("GET", `/v1/webhooks/${m.webhook_id}`, { token: m.api_key });
  t.equal(field(hook.body, "status"), "active", `the webhook's actor state reads${failed(hook)}`);
}

t.test(`an embedded data directory written by ${manifest.commit.slice(0, 7)} reads back`, async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "troupe-upgrade-embedded-"));
  const untar = spawnSync("tar", ["-xzf", join(fixtures, "embedded.tar.gz"), "-C", dataDir]);
  t.equal(untar.status, 0, "the fixture unpacks");
  const troupe = await startTestTroupe({ TROUPE_DATA_DIR: dataDir, TROUPE_MODE: "embedded", REDIS_URL: "", OUTBOUND_ALLOW_HOSTS: "127.0.0.1" });
  t.teardown(() => troupe.stop());
  await readsBack(t, troupe.request, manifest.embedded, "embedded");
});

t.test(`a Redis dump written by ${manifest.commit.slice(0, 7)} reads back (Redis data store and ledger, Dapr actor state)`, async (t) => {
  requireDaprPrerequisites();
  const redisDir = mkdtempSync(join(tmpdir(), "troupe-upgrade-redis-"));
  copyFileSync(join(fixtures, "dump.rdb"), join(redisDir, "dump.rdb"));
  const port = await freePort();
  const redis = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--dir", redisDir, "--dbfilename", "dump.rdb", "--save", "", "--appendonly", "no"], {
    stdio: "ignore",
  });
  t.teardown(() => void redis.kill("SIGKILL"));
  await waitFor(async () => spawnSync("redis-cli", ["-p", String(port), "ping"], { encoding: "utf8" }).stdout.trim() === "PONG", 10_000, "redis-server");
  const keys = spawnSync("redis-cli", ["-p", String(port), "dbsize"], { encoding: "utf8" }).stdout.trim();
  t.ok(Number(keys) > 20, `the dump is loaded (${keys} keys)`);
  const cluster = new LocalCluster({
    mode: "dapr",
    replicas: 1,
    dataDir: mkdtempSync(join(tmpdir(), "troupe-upgrade-cluster-")),
    appEntry: join(repoDir, "gateway/main.ts"),
    appEnv: { LOG_LEVEL: "warn", WEBHOOK_SECRET_KEY: manifest.webhook_secret_key, OUTBOUND_ALLOW_HOSTS: "127.0.0.1", ELASTICSEARCH_URL: "", S3_ENDPOINT: "" },
    redisUrl: `redis://127.0.0.1:${port}`,
    log: () => {},
  });
  t.teardown(() => cluster.stop());
  await cluster.start();
  const base = cluster.replicas[0]!.gatewayUrl;
  await readsBack(t, (method, path, options) => request(base, method, path, options), manifest.redis, "redis");
});
