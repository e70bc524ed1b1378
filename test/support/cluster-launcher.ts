// `npm run cluster` (scripts/cluster.ts) as a child process for tests: its
// combined output, its exit, and whether it reported ready.
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { repoDir } from "./dapr-cluster.ts";

export interface RunningLauncher {
  child: ChildProcess;
  /** Everything printed so far (stdout and stderr). */
  output(): string;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  /** True once the launcher prints its ready line; false if it exits first. */
  ready: Promise<boolean>;
}

export function startClusterLauncher(env: NodeJS.ProcessEnv): RunningLauncher {
  const child = spawn(process.execPath, [join(repoDir, "scripts/cluster.ts")], { cwd: repoDir, env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const ready = new Promise<boolean>((resolve) => {
    const timer = setInterval(() => {
      if (output.includes("Ctrl-C stops everything")) resolve(true);
      else if (child.exitCode !== null) resolve(false);
      else return;
      clearInterval(timer);
    }, 100);
  });
  return { child, output: () => output, exited, ready };
}
