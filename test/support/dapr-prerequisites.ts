// What the local cluster needs before it starts anything: the Dapr binaries
// (dapr/build.sh links them into dapr/.bin), redis-server (unless a Redis URL
// is given), and free loopback ports.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
export { freePorts } from "./net.ts";

export const repoDir = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const daprBinDir = join(repoDir, "dapr/.bin");

/** Throws a readable error naming what is missing for the Dapr mode. */
export function requireDaprPrerequisites(options: { build?: boolean; redisUrl?: string } = {}): void {
  const missing: string[] = [];
  const binaries = ["daprd", "placement", "scheduler"];
  if (!options.build) {
    for (const b of binaries) if (!existsSync(join(daprBinDir, b))) missing.push(`dapr/.bin/${b} (run: npm run dapr:build, i.e. bash dapr/build.sh)`);
  }
  if (!options.redisUrl && spawnSync("redis-server", ["--version"]).status !== 0) {
    missing.push("redis-server on PATH (apt-get install -y redis-server), or REDIS_URL");
  }
  if (missing.length > 0) throw new Error(`The Dapr actor tests need real Dapr and Redis; missing:\n  - ${missing.join("\n  - ")}`);
}


