// A 3-primary Redis Cluster for tests: TEST_REDIS_CLUSTER_NODES when set
// (CI starts one with scripts/redis-cluster.sh; not REDIS_CLUSTER_NODES
// itself, which every Troupe a test spawns with the inherited environment
// would obey), otherwise three private
// redis-server processes in cluster mode on free loopback ports, joined with
// `redis-cli --cluster create`, for this test file. A missing redis-server
// binary is a loud failure, never a skip.
import { spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isPortFree, waitFor } from "./net.ts";
import { spawnTestService } from "./test-service.ts";

export interface TestRedisCluster {
  /** `host:port` of every primary, as REDIS_CLUSTER_NODES takes them. */
  nodes: string[];
  stop(): Promise<void>;
}

export async function startTestRedisCluster(): Promise<TestRedisCluster> {
  const shared = process.env["TEST_REDIS_CLUSTER_NODES"];
  if (shared) return { nodes: shared.split(",").map((s) => s.trim()).filter(Boolean), stop: async () => {} };
  for (const bin of ["redis-server", "redis-cli"]) {
    const which = spawnSync("sh", ["-c", `command -v ${bin}`], { encoding: "utf8" });
    if (which.status !== 0) throw new Error(`${bin} is not installed (apt-get install -y redis-server) and TEST_REDIS_CLUSTER_NODES is not set`);
  }
  const root = mkdtempSync(join(tmpdir(), "troupe-redis-cluster-"));
  const children: ChildProcess[] = [];
  const nodes: string[] = [];
  const stop = async () => {
    for (const child of children) child.kill("SIGKILL");
    rmSync(root, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < 3; i++) {
      const port = await clusterPort();
      const dir = join(root, String(port));
      mkdirSync(dir);
      // prettier-ignore
      const args = ["--port", String(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes", "--cluster-config-file", join(dir, "nodes.conf"),
        "--save", "", "--appendonly", "no", "--dir", dir];
      children.push(spawnTestService("redis-server", args));
      nodes.push(`127.0.0.1:${port}`);
      await waitFor(async () => cli(port, "ping") === "PONG", 10_000, `redis-server (cluster mode) on port ${port}`);
    }
    const create = spawnSync("redis-cli", ["--cluster", "create", ...nodes, "--cluster-replicas", "0", "--cluster-yes"], { encoding: "utf8" });
    if (create.status !== 0) throw new Error(`redis-cli --cluster create failed:\n${create.stdout}\n${create.stderr}`);
    // Every node must see every slot assigned before a client can rely on it.
    for (const node of nodes) {
      const port = Number(node.split(":")[1]);
      await waitFor(async () => cli(port, "cluster", "info").includes("cluster_state:ok"), 20_000, `cluster_state:ok on ${node}`);
    }
    return { nodes, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** A port P with P+10000 free too: each node's cluster bus listens on P+10000. */
async function clusterPort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 30_000);
    if ((await isPortFree(port)) && (await isPortFree(port + 10_000))) return port;
  }
}

function cli(port: number, ...command: string[]): string {
  return spawnSync("redis-cli", ["-p", String(port), ...command], { encoding: "utf8" }).stdout.trim();
}
