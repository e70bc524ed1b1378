// `npm run backup:check-distributed`: checks the distributed backup
// procedure (docs/operations/backup-and-restore.md, scripts/distributed-backup.ts)
// end to end on a local cluster of its own: a Redis, an Elasticsearch
// (scripts/elasticsearch.sh, path.repo under its data dir), a MinIO
// (scripts/minio.sh) and a Troupe replica with its daprd, placement and
// scheduler (LocalCluster). It writes accounts, a live key, an agent
// conversation, a video job (its clips and result in S3), indexed vectors and
// a speech file, and usage; backs the three stores up while Troupe serves;
// stops Troupe and wipes every store (FLUSHALL, the index deleted, the bucket
// emptied); restores; starts a new Troupe on them (a new data directory: no
// replica-local state helps) and reads everything back. Exits 1 on a miss.
//
// Flags: --omit=redis|elasticsearch|s3 (leave that store out of the backup:
// the check must then fail), --keep (leave the directories).
import { spawn, type ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { z } from "zod";
import { LocalCluster, repoDir, requireDaprPrerequisites } from "../test/support/dapr-cluster.ts";
import { freePort, waitFor } from "../test/support/net.ts";
import { runScript } from "../test/support/run-script.ts";
import { backupElasticsearch, backupRedis, backupS3, deleteIndex, emptyBucket, restoreElasticsearch, restoreRedisFile, restoreS3 } from "./distributed-backup.ts";
import type { S3Settings } from "../media/s3-file-store.ts";

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split(/=(.*)/s).slice(0, 2) as [string, string]));
const omit = z.enum(["redis", "elasticsearch", "s3"]).optional().parse(args.get("omit"));
const say = (line: string) => process.stdout.write(`backup-check: ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const index = "troupe-backup-check";
const password = "backup-check password";

for (const name of ["REDIS_URL", "ELASTICSEARCH_URL", "S3_ENDPOINT", "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY", "S3_BUCKET"]) delete process.env[name];
// Webhook secrets are sealed with this key in Redis: the restored Troupe needs the same one (it is configuration, not data).
process.env["WEBHOOK_SECRET_KEY"] = randomBytes(32).toString("base64");
requireDaprPrerequisites({ build: true });
const root = mkdtempSync(join(tmpdir(), "troupe-backup-check-"));
const backupDir = join(root, "backup");
const cleanups: (() => Promise<unknown>)[] = [];
let exitCode = 1;
try {
  exitCode = await main();
} catch (error) {
  process.stderr.write(`backup-check: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
} finally {
  for (const step of cleanups.reverse()) await step().catch(() => undefined);
  if (!args.has("keep")) rmSync(root, { recursive: true, force: true });
  else say(`kept ${root}`);
}
process.exit(exitCode);

async function main(): Promise<number> {
  // --- The stores ------------------------------------------------------------
  const redisDir = join(root, "redis");
  mkdirSync(redisDir);
  const redisPort = await freePort();
  const redisUrl = `redis://127.0.0.1:${redisPort}`;
  let redis = await startRedis(redisPort, redisDir);
  cleanups.push(async () => redis.kill("SIGKILL"));
  const esPort = await freePort();
  const esEnv = { ...process.env, ES_PORT: String(esPort), ES_DATA_DIR: join(root, "elasticsearch"), ES_HEAP: "512m" };
  const esOut = await runScript("bash", ["scripts/elasticsearch.sh", "start"], esEnv);
  cleanups.push(() => runScript("bash", ["scripts/elasticsearch.sh", "stop"], esEnv));
  const esUrl = line(esOut, "ELASTICSEARCH_URL");
  // As root, the server keeps its data in a substitute directory it can reach (/var/tmp/troupe-es-…): removed too.
  const esDataDir = line(esOut, "ES_DATA_DIR");
  if (!esDataDir.startsWith(root) && !args.has("keep")) cleanups.splice(cleanups.length - 1, 0, async () => rmSync(esDataDir, { recursive: true, force: true }));
  // The data dir it printed: path.repo is its snapshots/ directory.
  const snapshotLocation = join(esDataDir, "snapshots", "backup-check");
  const minioEnv = { ...process.env, MINIO_DATA_DIR: join(root, "minio"), S3_BUCKET: "troupe-backup-check" };
  const minioOut = await runScript("bash", ["scripts/minio.sh", "start"], minioEnv);
  cleanups.push(() => runScript("bash", ["scripts/minio.sh", "stop"], minioEnv));
  const s3: S3Settings = { endpoint: line(minioOut, "S3_ENDPOINT"), bucket: line(minioOut, "S3_BUCKET"), region: line(minioOut, "S3_REGION"), accessKeyId: line(minioOut, "S3_ACCESS_KEY_ID"), secretAccessKey: line(minioOut, "S3_SECRET_ACCESS_KEY") };
  const appEnv = {
    LOG_LEVEL: "warn",
    ELASTICSEARCH_URL: esUrl,
    ELASTICSEARCH_INDEX: index,
    S3_ENDPOINT: s3.endpoint,
    S3_BUCKET: s3.bucket,
    S3_REGION: s3.region,
    S3_ACCESS_KEY_ID: s3.accessKeyId,
    S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
    SIMULATED_VIDEO_DELAY_MS: "50",
  };
  const startTroupe = async (name: string) => {
    const cluster = new LocalCluster({ mode: "dapr", replicas: 1, dataDir: join(root, name), appEntry: join(repoDir, "gateway/main.ts"), redisUrl, appEnv, build: true, readyTimeoutMs: 120_000, log: say });
    cleanups.push(() => cluster.stop());
    await cluster.start();
    return { cluster, api: client(cluster.replicas[0]!.gatewayUrl) };
  };

  // --- Write -------------------------------------------------------------------
  const first = await startTroupe("troupe-1");
  const written = await writeEverything(first.api);
  say(`written: ${written.emails.length} accounts, 1 live key, ${written.chats} chat calls, conversation ${written.conversation.id} (${written.conversation.messages} messages), job ${written.job}, ${written.vectors.length} vectors, file ${written.file.url}`);

  // --- Back up while Troupe serves: Redis first, then Elasticsearch and S3 -------
  const figures: string[] = [];
  if (omit !== "redis") figures.push(`redis dump.rdb ${await backupRedis(redisUrl, join(backupDir, "redis"))} bytes`);
  if (omit !== "elasticsearch") figures.push(`elasticsearch snapshot ${await backupElasticsearch(esUrl, "troupe-backup", snapshotLocation, "check-1", index)}`);
  if (omit !== "s3") figures.push(`s3 ${await backupS3(s3, join(backupDir, "s3"))} objects`);
  say(`backed up${omit ? ` (leaving ${omit} out)` : ""}: ${figures.join("; ")}`);

  // --- Lose everything -------------------------------------------------------------
  await first.cluster.stop();
  const wipe = new Redis(redisUrl);
  await wipe.flushall();
  wipe.disconnect();
  await deleteIndex(esUrl, index);
  say(`wiped: Redis flushed, index ${index} deleted, ${await emptyBucket(s3)} objects deleted from the bucket`);

  // --- Restore: Redis from its file (stopped), then the index and the bucket -------
  await redisCli(redisPort, "SHUTDOWN", "NOSAVE").catch(() => undefined);
  await new Promise((r) => (redis.exitCode === null ? redis.once("exit", r) : r(undefined)));
  if (omit !== "redis") restoreRedisFile(join(backupDir, "redis"), redisDir);
  redis = await startRedis(redisPort, redisDir);
  if (omit !== "elasticsearch") await restoreElasticsearch(esUrl, "troupe-backup", snapshotLocation, "check-1", index);
  if (omit !== "s3") await restoreS3(s3, join(backupDir, "s3"));
  say("restored; starting a new Troupe (new data directory) on the restored stores");

  // --- Read back --------------------------------------------------------------------
  const second = await startTroupe("troupe-2");
  const misses = await readBack(second.api, written);
  for (const miss of misses) console.log(`MISS ${miss}`);
  console.log(misses.length ? `backup-check: ${misses.length} miss(es)${omit ? ` (${omit} left out of the backup)` : ""}` : "backup-check: everything written before the backup reads back");
  return misses.length ? 1 : 0;
}

// --- What is written and read back -------------------------------------------------

interface Written {
  owner: { email: string; token: string; projectId: string };
  key: string;
  emails: string[];
  chats: number;
  conversation: { id: string; messages: number };
  job: string;
  vectors: { id: string; content: string }[];
  file: { url: string; sha256: string };
}

type Api = ReturnType<typeof client>;

async function writeEverything(api: Api): Promise<Written> {
  const emails: string[] = [];
  let owner: Written["owner"] | undefined;
  let env = "";
  for (let i = 0; i < 3; i++) {
    const email = `backup-${i}-${Date.now()}@example.test`;
    const s = await api.expect(201, "POST", "/v1/auth/signup", { email, password });
    emails.push(email);
    if (!owner) {
      owner = { email, token: String(s["session_token"]), projectId: String((s["project"] as { id: string }).id) };
      env = (s["environments"] as { environment: { id: string; production: boolean } }[]).find((e) => e.environment.production)!.environment.id;
    }
  }
  const key = String((await api.expect(201, "POST", `/v1/environments/${env}/api-keys`, { name: "backup", live: true }, owner!.token))["key"]);
  const chat = { model: "simulated-chat", routing_strategy: "manual", messages: [{ role: "user", content: "hello" }] };
  for (let i = 0; i < 3; i++) await api.expect(200, "POST", "/v1/chat/completions", chat, key);
  const id = String((await api.expect(201, "POST", "/v1/agents/conversations", { model: "simulated-chat" }, key))["id"]);
  const turn = await api.expect(200, "POST", `/v1/agents/conversations/${id}/messages`, { content: "remember the lighthouse" }, key);
  const job = String((await api.expect(202, "POST", "/v1/video/generate", { prompt: "a lighthouse", duration_seconds: 1, model: "simulated-video", routing_strategy: "manual" }, key))["job_id"]);
  await waitFor(async () => (await api.expect(200, "GET", `/v1/jobs/${job}`, undefined, key))["status"] === "completed", 90_000, `job ${job} completed`);
  const vectors: Written["vectors"] = [];
  for (const content of ["a red lighthouse on a cliff", "stock prices fell sharply", "a recipe for onion soup"]) {
    vectors.push({ id: String((await api.expect(200, "POST", "/v1/embeddings/index", { content }, key))["id"]), content });
  }
  const speech = await api.expect(200, "POST", "/v1/audio/speech", { model: "simulated-speech", voice: "alto", text: "Backed up." }, key);
  const url = String(speech["audio"]);
  const file = { url, sha256: sha256(await (await fetch(url)).arrayBuffer()) };
  // The usage recorder flushes within 200 ms of each answer: the backup must find every call billed.
  await sleep(500);
  return { owner: owner!, key, emails, chats: 3, conversation: { id, messages: (turn["messages"] as unknown[]).length }, job, vectors, file };
}

async function readBack(api: Api, w: Written): Promise<string[]> {
  const misses: string[] = [];
  const check = async (what: string, probe: () => Promise<string | undefined>) => {
    const why = await probe().catch((error: unknown) => (error instanceof Error ? error.message : String(error)));
    say(`${why === undefined ? "ok  " : "MISS"} ${what}${why === undefined ? "" : `: ${why}`}`);
    if (why !== undefined) misses.push(`${what}: ${why}`);
  };
  for (const email of w.emails) await check(`account ${email} logs in`, async () => describe(await api.call("POST", "/v1/auth/login", { email, password })));
  await check("the live key answers a chat call", async () => describe(await api.call("POST", "/v1/chat/completions", { model: "simulated-chat", routing_strategy: "manual", messages: [{ role: "user", content: "again" }] }, w.key)));
  await check(`conversation ${w.conversation.id} has its ${w.conversation.messages} messages`, async () => {
    const got = await api.call("GET", `/v1/agents/conversations/${w.conversation.id}`, undefined, w.key);
    const n = ((got.body["messages"] as unknown[] | undefined) ?? []).length;
    return got.status !== 200 ? describe(got) : n < w.conversation.messages ? `${n} messages` : undefined;
  });
  await check(`job ${w.job} is completed`, async () => {
    const got = await api.call("GET", `/v1/jobs/${w.job}`, undefined, w.key);
    return got.status !== 200 ? describe(got) : got.body["status"] !== "completed" ? `status ${String(got.body["status"])}` : undefined;
  });
  for (const v of w.vectors) {
    await check(`vector ${v.id} is found by its content`, async () => {
      const got = await api.call("POST", "/v1/embeddings/search", { query: v.content, top_k: 1 }, w.key);
      const top = (got.body["results"] as { id: string }[] | undefined)?.[0]?.id;
      return got.status !== 200 ? describe(got) : top !== v.id ? `top result ${top ?? "none"}` : undefined;
    });
  }
  // The new replica listens elsewhere: the file's path, on it.
  const path = new URL(w.file.url).pathname;
  await check(`file ${path} has the same bytes`, async () => {
    const res = await fetch(api.base + path);
    if (res.status !== 200) return `HTTP ${res.status}`;
    return sha256(await res.arrayBuffer()) === w.file.sha256 ? undefined : "different bytes";
  });
  await check(`usage holds the ${w.chats} chat calls`, async () => {
    const got = await api.call("GET", `/v1/projects/${w.owner.projectId}/usage?group_by=category`, undefined, (await api.call("POST", "/v1/auth/login", { email: w.owner.email, password })).body["session_token"] as string);
    const calls = (got.body["groups"] as { key: string; live: { calls: number } }[] | undefined)?.find((g) => g.key === "chat")?.live.calls ?? 0;
    return got.status !== 200 ? describe(got) : calls < w.chats ? `${calls} chat calls` : undefined;
  });
  return misses;
}

// --- Plumbing ------------------------------------------------------------------------

function client(base: string) {
  const call = async (method: string, path: string, body?: unknown, token?: string) => {
    const res = await fetch(base + path, {
      method,
      headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: Record<string, unknown> = {};
    try {
      parsed = JSON.parse(text) as Record<string, unknown>;
    } catch {
      parsed = { text };
    }
    return { status: res.status, body: parsed };
  };
  const expect = async (status: number, method: string, path: string, body?: unknown, token?: string) => {
    const res = await call(method, path, body, token);
    if (res.status !== status) throw new Error(`${method} ${path}: ${describe(res)} (expected ${status})`);
    return res.body;
  };
  return { base, call, expect };
}

function describe(res: { status: number; body: Record<string, unknown> }): string | undefined {
  return res.status >= 200 && res.status < 300 ? undefined : `HTTP ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`;
}

function sha256(bytes: ArrayBuffer): string {
  return createHash("sha256").update(Buffer.from(bytes)).digest("hex");
}

function line(output: string, name: string): string {
  const value = output.match(new RegExp(`^${name}=(.*)$`, "m"))?.[1];
  if (!value) throw new Error(`no ${name}= in:\n${output}`);
  return value;
}

async function startRedis(port: number, dir: string): Promise<ChildProcess> {
  // No RDB schedule and no AOF: the only save is the backup's BGSAVE, and a restart loads dump.rdb.
  const child = spawn("redis-server", ["--bind", "127.0.0.1", "--port", String(port), "--dir", dir, "--dbfilename", "dump.rdb", "--save", "", "--appendonly", "no"], { stdio: "ignore" });
  await waitFor(async () => (await redisCli(port, "PING").catch(() => "")) === "PONG", 10_000, "redis-server");
  return child;
}

function redisCli(port: number, ...command: string[]): Promise<string> {
  return runScript("redis-cli", ["-p", String(port), ...command], process.env).then((out) => out.trim());
}
