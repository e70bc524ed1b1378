// A Redis for tests: REDIS_URL when set (CI starts one), otherwise a private
// redis-server on a free loopback port for this test file. A missing
// redis-server binary is a loud failure, never a skip.
import { spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, waitFor } from "./net.ts";
import { spawnTestService } from "./test-service.ts";

export interface TestRedis {
  url: string;
  stop(): Promise<void>;
}

export async function startTestRedis(): Promise<TestRedis> {
  const shared = process.env["REDIS_URL"];
  if (shared) return { url: shared, stop: async () => {} };
  const which = spawnSync("sh", ["-c", "command -v redis-server"], { encoding: "utf8" });
  if (which.status !== 0) throw new Error("redis-server is not installed (apt-get install -y redis-server) and REDIS_URL is not set");
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "troupe-redis-"));
  const child: ChildProcess = spawnTestService("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes", "--dir", dir]);
  await waitFor(async () => {
    const ping = spawnSync("redis-cli", ["-p", String(port), "ping"], { encoding: "utf8" });
    return ping.stdout.trim() === "PONG";
  }, 10_000, `redis-server on port ${port}`);
  return {
    url: `redis://127.0.0.1:${port}`,
    stop: async () => {
      child.kill("SIGKILL");
    },
  };
}
