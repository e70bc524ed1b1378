// The data stores bench/soak.ts runs Troupe on, and what it reads from them
// each sample: one redis-server of its own (`--redis`), a 3-primary Redis
// Cluster (`--cluster`: its own, started and stopped with
// scripts/redis-cluster.sh, or `--cluster=host:port,…` to use a running one),
// or none (embedded: the ledger's lmdb file is read-only opened to count the
// per-call entries it holds).
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { open } from "lmdb";

export interface SoakStore {
  /** What Troupe's environment needs to run on it (bench/chat.ts's BENCH_* names). */
  env: Record<string, string>;
  /** Redis's used_memory, summed over the cluster's primaries; undefined when embedded. */
  usedMemory(): Promise<number | undefined>;
  /** Per-call ledger entries held (every generation's, every project's). */
  heldEntries(): Promise<number>;
  stop(): Promise<void>;
}

async function waitForPong(port: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (spawnSync("redis-cli", ["-p", String(port), "ping"], { encoding: "utf8" }).stdout.trim() === "PONG") return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`redis-server on port ${port} did not start`);
}

/** INFO memory's used_memory, summed over `nodes` (NaN when a node does not report it). */
export async function redisUsedMemory(nodes: Redis[]): Promise<number> {
  const infos = await Promise.all(nodes.map((node) => node.info("memory")));
  return infos.reduce((sum, info) => sum + Number(/used_memory:(\d+)/.exec(info)?.[1] ?? NaN), 0);
}

/** used_memory and the ledger's per-call hashes (`troupe:bill:calls:*`, found by SCAN) of some Redis nodes. */
function redisSampler(nodes: Redis[]): Pick<SoakStore, "usedMemory" | "heldEntries"> {
  return {
    usedMemory: () => redisUsedMemory(nodes),
    async heldEntries() {
      let held = 0;
      for (const node of nodes) {
        let cursor = "0";
        do {
          const [next, keys] = await node.scan(cursor, "MATCH", "troupe:bill:calls:*", "COUNT", 1000);
          for (const key of keys) held += await node.hlen(key);
          cursor = next;
        } while (cursor !== "0");
      }
      return held;
    },
  };
}

/** A redis-server of the soak's own on a random port, nothing persisted. */
export async function ownRedis(): Promise<SoakStore> {
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const dir = mkdtempSync(join(tmpdir(), "troupe-soak-redis-"));
  const child: ChildProcess = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir], { stdio: "ignore" });
  await waitForPong(port);
  const client = new Redis(port, "127.0.0.1");
  return {
    env: { BENCH_REDIS_URL: `redis://127.0.0.1:${port}` },
    ...redisSampler([client]),
    async stop() {
      await client.quit();
      child.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A Redis Cluster: `nodes` (a running one: its primaries' used_memory then
 * includes whatever else it holds), else a fresh 3-primary one started with
 * scripts/redis-cluster.sh under a temporary directory and stopped after.
 */
export async function clusterRedis(root: string, nodes: string[] | undefined): Promise<SoakStore> {
  let started: string | undefined;
  if (!nodes) {
    started = mkdtempSync(join(tmpdir(), "troupe-soak-cluster-"));
    const out = spawnSync("bash", [join(root, "scripts", "redis-cluster.sh"), "start"], { encoding: "utf8", env: { ...process.env, REDIS_CLUSTER_DIR: started } });
    const line = /REDIS_CLUSTER_NODES=(\S+)/.exec(out.stdout)?.[1];
    if (out.status !== 0 || !line) throw new Error(`scripts/redis-cluster.sh start failed:\n${out.stdout}\n${out.stderr}`);
    nodes = line.split(",");
  }
  // One plain connection per node: INFO and SCAN are per node, and each hash lives on the node that owns its slot.
  const clients = nodes.map((node) => {
    const [host = "127.0.0.1", port = "0"] = node.replace(/^rediss?:\/\/([^@]*@)?/, "").split(":");
    return new Redis(Number(port), host);
  });
  // Only primaries hold the keys (replicas would count them twice).
  const roles = await Promise.all(clients.map(async (c) => /role:(\w+)/.exec(await c.info("replication"))?.[1]));
  const primaries = clients.filter((_, i) => roles[i] === "master");
  const dir = started;
  return {
    env: { BENCH_REDIS_CLUSTER_NODES: nodes.join(",") },
    ...redisSampler(primaries),
    async stop() {
      await Promise.all(clients.map((c) => c.quit()));
      if (!dir) return;
      spawnSync("bash", [join(root, "scripts", "redis-cluster.sh"), "stop"], { stdio: "ignore", env: { ...process.env, REDIS_CLUSTER_DIR: dir } });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Embedded: the entries of the ledger's per-call databases (`calls-<slot>`), read from a short read-only open. */
export function embedded(dataDir: () => string): SoakStore {
  return {
    env: {},
    async usedMemory() {
      return undefined;
    },
    async heldEntries() {
      const root = open({ path: join(dataDir(), "billing", "ledger.lmdb"), readOnly: true });
      let held = 0;
      try {
        for (let slot = 0; slot < 64; slot++) {
          const db = root.openDB({ name: `calls-${slot}` });
          if (!db) break;
          held += (db.getStats() as { entryCount: number }).entryCount;
        }
      } catch {
        // A slot database that does not exist: the ones before it are all there is.
      } finally {
        await root.close();
      }
      return held;
    },
    async stop() {},
  };
}
