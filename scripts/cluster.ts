// `npm run cluster`: a local distributed Troupe on one machine. Builds the
// Dapr binaries if missing (dapr/build.sh, cached), starts Redis (unless
// REDIS_URL is set), placement, scheduler, and TROUPE_REPLICAS replicas of
// the gateway, each with its own daprd. Replica i serves the gateway on
// PORT+i and its daprd HTTP API on DAPR_HTTP_PORT+i; every other port is a
// free loopback port. Logs go to <TROUPE_DATA_DIR>/logs. Runs until SIGINT
// or SIGTERM, then stops everything it started.
//
// Environment: TROUPE_REPLICAS (2), PORT (8080), DAPR_HTTP_PORT (3500),
// TROUPE_DATA_DIR (./.troupe/cluster), REDIS_URL, ELASTICSEARCH_URL and any
// other gateway setting (passed through to every replica),
// TROUPE_CLUSTER_APP (the replica entry script, default gateway/main.ts).
//
// The replicas share one vector index, so unless ELASTICSEARCH_URL is set
// the launcher starts Elasticsearch with scripts/elasticsearch.sh (ES_PORT,
// default 9200; data under <TROUPE_DATA_DIR>/elasticsearch, or under
// /var/tmp/troupe-es-<hash> when that is out of the Elasticsearch user's reach,
// as when the checkout sits under /root; the launcher says which) and stops
// it on exit. A test app (TROUPE_CLUSTER_APP) gets none. Likewise the replicas
// share one file store: unless S3_ENDPOINT is set, the launcher starts MinIO
// with scripts/minio.sh (built from Go modules once, cached; data under
// <TROUPE_DATA_DIR>/minio) and gives every replica its S3_* settings, so any
// replica serves any /v1/files/{id}.
import { spawn } from "node:child_process";
import { join, resolve } from "node:path";
import { z } from "zod";
import { LocalCluster, repoDir } from "../test/support/dapr-cluster.ts";

const env = z
  .object({
    TROUPE_REPLICAS: z.coerce.number().int().min(1).max(16).default(2),
    PORT: z.coerce.number().int().min(1).max(65535).default(8080),
    DAPR_HTTP_PORT: z.coerce.number().int().min(1).max(65535).default(3500),
    TROUPE_DATA_DIR: z.string().default("./.troupe/cluster"),
    REDIS_URL: z.string().optional(),
    TROUPE_CLUSTER_APP: z.string().default("gateway/main.ts"),
    ELASTICSEARCH_URL: z.string().optional(),
    ES_PORT: z.coerce.number().int().min(1).max(65535).default(9200),
    S3_ENDPOINT: z.string().optional(),
  })
  .parse(process.env);

const dataDir = resolve(env.TROUPE_DATA_DIR);
const say = (line: string) => process.stdout.write(`cluster: ${line}\n`);
const started = Date.now();
say(`starting ${env.TROUPE_REPLICAS} replica(s); logs in ${dataDir}/logs`);

const esDataDir = join(dataDir, "elasticsearch");
const needsElasticsearch = !env.ELASTICSEARCH_URL && env.TROUPE_CLUSTER_APP === "gateway/main.ts";

/** Runs scripts/elasticsearch.sh; resolves with its ELASTICSEARCH_URL and ES_DATA_DIR lines. */
function elasticsearch(command: "start" | "stop"): Promise<{ url: string; dataDir: string | undefined }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn("bash", [join(repoDir, "scripts/elasticsearch.sh"), command], {
      env: { ...process.env, ES_PORT: String(env.ES_PORT), ES_DATA_DIR: esDataDir },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.once("exit", (code) => {
      const url = /ELASTICSEARCH_URL=(\S+)/.exec(out)?.[1];
      const dataDir = /ES_DATA_DIR=(\S+)/.exec(out)?.[1];
      if (code === 0) resolvePromise({ url: url ?? "", dataDir });
      else reject(new Error(`Elasticsearch did not ${command}: scripts/elasticsearch.sh ${command} exited with ${code} (its reason is printed above).`));
    });
  });
}

const minioDataDir = join(dataDir, "minio");
const needsMinio = !env.S3_ENDPOINT && env.TROUPE_CLUSTER_APP === "gateway/main.ts";

/** Runs scripts/minio.sh; resolves with the S3_* settings it prints. */
function minio(command: "start" | "stop"): Promise<Record<string, string>> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn("bash", [join(repoDir, "scripts/minio.sh"), command], {
      env: { ...process.env, MINIO_DATA_DIR: minioDataDir },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.once("exit", (code) => {
      const settings: Record<string, string> = {};
      for (const m of out.matchAll(/^(S3_[A-Z_]+)=(\S+)$/gm)) settings[m[1]!] = m[2]!;
      if (code === 0) resolvePromise(settings);
      else reject(new Error(`scripts/minio.sh ${command} exited with ${code}`));
    });
  });
}

let s3Env: Record<string, string> = {};
if (needsMinio) {
  say("starting MinIO for the shared file store (set S3_ENDPOINT to use another S3-compatible store)");
  s3Env = await minio("start").catch((error: unknown) => {
    process.stderr.write(`cluster: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}

let elasticsearchUrl = env.ELASTICSEARCH_URL;
if (needsElasticsearch) {
  say(`starting Elasticsearch on 127.0.0.1:${env.ES_PORT} for the shared vector index (set ELASTICSEARCH_URL to use another)`);
  const es = await elasticsearch("start").catch((error: unknown) => {
    process.stderr.write(`cluster: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
  elasticsearchUrl = es.url;
  if (es.dataDir) say(`elasticsearch ${es.url} keeps its data in ${es.dataDir}`);
}

const cluster = new LocalCluster({
  mode: "dapr",
  replicas: env.TROUPE_REPLICAS,
  dataDir,
  appEntry: resolve(repoDir, env.TROUPE_CLUSTER_APP),
  basePort: env.PORT,
  daprHttpBasePort: env.DAPR_HTTP_PORT,
  ...(env.REDIS_URL ? { redisUrl: env.REDIS_URL } : {}),
  appEnv: { ...(elasticsearchUrl ? { ELASTICSEARCH_URL: elasticsearchUrl } : {}), ...s3Env },
  build: true,
  readyTimeoutMs: 120_000,
  log: say,
});

let stopping = false;
const stop = (signal: string): void => {
  if (stopping) return;
  stopping = true;
  say(`${signal}: stopping`);
  void cluster
    .stop()
    .then(() => (needsElasticsearch ? elasticsearch("stop") : undefined))
    .then(() => (needsMinio ? minio("stop") : undefined))
    .catch((error: unknown) => say(`stop: ${error instanceof Error ? error.message : String(error)}`))
    .then(() => {
      say("stopped");
      process.exit(0);
    });
};
// Installed before starting, so Ctrl-C during start-up still stops what was started.
process.on("SIGINT", () => stop("SIGINT"));
process.on("SIGTERM", () => stop("SIGTERM"));

try {
  await cluster.start();
} catch (error) {
  if (!stopping) {
    process.stderr.write(`cluster: failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  }
}
if (stopping) await new Promise(() => {}); // stop() exits the process

for (const r of cluster.replicas) {
  say(`replica ${r.index}: gateway ${r.gatewayUrl}  daprd ${r.daprHttpUrl}  (logs ${r.appLog}, ${r.daprdLog})`);
}
say(`redis ${cluster.redisUrl}${elasticsearchUrl ? `; elasticsearch ${elasticsearchUrl}` : ""}${s3Env["S3_ENDPOINT"] ? `; files in ${s3Env["S3_ENDPOINT"]}` : ""}; ready in ${((Date.now() - started) / 1000).toFixed(1)} s; Ctrl-C stops everything`);

