// REDIS_CLUSTER_NODES: parsed and validated in core/config.ts, wins over
// REDIS_URL, and a seed's password reaches every primary the client
// discovers (a cluster with requirepass on each node).
import { spawnSync } from "node:child_process";
import t from "tap";
import { loadConfig } from "../../gateway/config.ts";
import { RedisDataStore } from "../../tenancy/redis-data-store.ts";
import { redisTarget } from "../../tenancy/redis-target.ts";
import { startTestRedisCluster } from "../support/redis-cluster.ts";

t.test("REDIS_CLUSTER_NODES is a comma list of host:port or redis[s]:// URLs and wins over REDIS_URL", async (t) => {
  const config = loadConfig({ REDIS_URL: "redis://one:6379", REDIS_CLUSTER_NODES: " 10.0.0.1:7000, rediss://:s3cret@redis-cluster.example:6380 " });
  t.same(config.redisClusterNodes, ["10.0.0.1:7000", "rediss://:s3cret@redis-cluster.example:6380"]);
  t.same(redisTarget(config), { clusterNodes: ["10.0.0.1:7000", "rediss://:s3cret@redis-cluster.example:6380"] });
  t.same(redisTarget(loadConfig({ REDIS_URL: "redis://one:6379" })), { url: "redis://one:6379" });
  t.equal(redisTarget(loadConfig({})), undefined, "neither: embedded");
  for (const bad of ["10.0.0.1", "http://x:7000", "a:1,b"]) {
    t.throws(() => loadConfig({ REDIS_CLUSTER_NODES: bad }), /REDIS_CLUSTER_NODES/, `refused: ${bad}`);
  }
});

t.test("a password in a seed URL authenticates every primary", async (t) => {
  const cluster = await startTestRedisCluster();
  t.teardown(() => cluster.stop());
  if (process.env["TEST_REDIS_CLUSTER_NODES"]) {
    t.comment("a shared cluster (TEST_REDIS_CLUSTER_NODES): not setting a password on it");
    return;
  }
  const password = "cluster-test-secret";
  for (const node of cluster.nodes) {
    const port = node.split(":")[1] ?? "";
    const set = spawnSync("redis-cli", ["-p", port, "config", "set", "requirepass", password], { encoding: "utf8" });
    t.equal(set.stdout.trim(), "OK", `requirepass on ${node}`);
  }
  const [first, ...others] = cluster.nodes;
  const store = new RedisDataStore({ clusterNodes: [`redis://:${password}@${first}`, ...others] }, `test:auth:${Date.now()}:`);
  t.teardown(() => store.close());
  // Counters are single-key and untagged: 30 of them land on all three primaries.
  const hits = await Promise.all(Array.from({ length: 30 }, (_, i) => store.hit(`spread-${i}`, 60_000)));
  t.ok(hits.every((h) => h.count === 1));
  await store.apply([{ op: "put", key: "doc", value: { ok: true } }]);
  t.same(await store.get("doc"), { ok: true });
});
