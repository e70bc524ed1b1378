// Runs a command from the repository's root to its end (scripts/minio.sh,
// scripts/elasticsearch.sh, redis-cli) for the tests, benches and scripts
// that start services themselves.
import { spawn } from "node:child_process";
import { repoDir } from "./dapr-cluster.ts";

/** The command's stdout; throws with the tail of its stderr (800 characters) when it exits non-zero. */
export function runScript(command: string, argv: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, argv, { cwd: repoDir, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr.on("data", (c: Buffer) => (err += c.toString()));
    child.once("exit", (code) => (code === 0 ? resolve(out) : reject(new Error(`${command} ${argv.join(" ")}: exit ${code}: ${err.slice(-800)}`))));
  });
}
