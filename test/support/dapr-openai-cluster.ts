// The Dapr cluster fixtures. startDaprCluster: a Redis (REDIS_URL or a
// private one), the Dapr binaries checked, and N gateway replicas
// (TROUPE_MODE=dapr, each with its own daprd, sharing Redis, placement and
// scheduler) with the test's environment; the cluster tests that bring their
// own fakes (billing-cluster, observability-cluster, providers-dapr) start
// it. startDaprOpenAICluster adds the OpenAI fake in this process, the
// replicas pointed at it, and a client of the cluster's Redis ledger to read
// the bills from: the kill -9 tests (test/gateway/batches-kill-dapr.test.ts,
// test/gateway/compat/responses-background-dapr.test.ts,
// test/gateway/compat/responses-background-queued-kill-dapr.test.ts) and
// billing-cluster. Everything started is stopped at the test's teardown.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { RedisLedgerStore } from "../../tenancy/redis-ledger-store.ts";
import { startOpenAIFake } from "../fakes/openai-fake.ts";
import { LocalCluster, repoDir, requireDaprPrerequisites } from "./dapr-cluster.ts";
import { ownVectorIndex } from "./own-vector-index.ts";
import { startTestRedis } from "./redis.ts";

export interface DaprClusterOptions {
  /** Names the cluster's data dir (`troupe-<label>-…` under the temp dir) and its own vector index. */
  label: string;
  replicas: number;
  /**
   * Environment of every replica. LocalCluster reads this very object each
   * time it spawns a replica (it is not copied), so a variable set on it
   * before startReplica reaches the restarted one.
   */
  appEnv?: Record<string, string>;
  /** An Elasticsearch index of the cluster's own on an inherited ELASTICSEARCH_URL (test/support/own-vector-index.ts), dropped at teardown. */
  ownVectorIndex?: boolean;
  /** Closed at teardown after the replicas stop and before Redis does: the test's fakes and receivers. */
  closeAfter?: (() => Promise<unknown>)[];
}

export async function startDaprCluster(options: DaprClusterOptions) {
  const redis = await startTestRedis();
  requireDaprPrerequisites({ redisUrl: redis.url });
  const appEnv = options.appEnv ?? {};
  const closeAfter = options.closeAfter ?? [];
  if (options.ownVectorIndex) {
    const vectorIndex = ownVectorIndex(options.label);
    Object.assign(appEnv, vectorIndex.env);
    closeAfter.unshift(() => vectorIndex.drop());
  }
  const cluster = new LocalCluster({
    mode: "dapr",
    replicas: options.replicas,
    dataDir: mkdtempSync(join(tmpdir(), `troupe-${options.label}-`)),
    appEntry: join(repoDir, "gateway/main.ts"),
    appEnv,
    redisUrl: redis.url,
  });
  t.teardown(async () => {
    await cluster.stop();
    for (const close of closeAfter) await close();
    await redis.stop();
  });
  await cluster.start();
  return { cluster, redis, appEnv, closeAfter, urls: cluster.replicas.map((r) => r.gatewayUrl) };
}

export async function startDaprOpenAICluster(options: DaprClusterOptions) {
  const openai = await startOpenAIFake({ apiKey: "sk-fake" });
  const appEnv: Record<string, string> = {
    LOG_LEVEL: "warn",
    OPENAI_API_KEY: "sk-fake",
    OPENAI_BASE_URL: `${openai.url}/v1`,
    OUTBOUND_ALLOW_HOSTS: "127.0.0.1,localhost",
    ...options.appEnv,
  };
  const started = await startDaprCluster({ ...options, appEnv, closeAfter: [...(options.closeAfter ?? []), () => openai.close()] });
  const ledger = new RedisLedgerStore(started.redis.url);
  // Before the fake and Redis: the ledger's client goes first.
  started.closeAfter.unshift(() => ledger.close());
  return { ...started, openai, ledger };
}
