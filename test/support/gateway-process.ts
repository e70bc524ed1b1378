// An embedded Troupe in a child process (`node gateway/main.ts`) on a data
// directory of its own, for the crash tests: they kill it with SIGKILL and
// start it again on the same directory. Shared services are not inherited
// (CI's REDIS_URL, ELASTICSEARCH_URL, TROUPE_MODE), so it is the embedded
// host whatever the test's environment.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, waitFor } from "./net.ts";

/**
 * The test's environment without the shared services (CI's REDIS_URL,
 * ELASTICSEARCH_URL, TROUPE_MODE): a child Troupe started with it is the
 * embedded host, whatever the test's environment. Inheriting REDIS_URL made
 * such children share one Redis, and so one signup throttle for 127.0.0.1
 * (20 an hour), with every other test of the run.
 */
export function embeddedEnv(): NodeJS.ProcessEnv {
  const { REDIS_URL: _redis, ELASTICSEARCH_URL: _elasticsearch, TROUPE_MODE: _mode, ...inherited } = process.env;
  return inherited;
}

export interface GatewayProcess {
  /** `http://127.0.0.1:<port>`, the same for every start. */
  base: string;
  dataDir: string;
  /** Spawns the gateway and resolves once /readyz answers (30 s at the most). */
  start(): Promise<ChildProcess>;
}

/** `dataDirPrefix` names the temporary data directory; `settings` are added to the environment (provider fakes, intervals). */
export async function gatewayProcess(dataDirPrefix: string, settings: Record<string, string> = {}): Promise<GatewayProcess> {
  const dataDir = mkdtempSync(join(tmpdir(), dataDirPrefix));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = { ...embeddedEnv(), PORT: String(port), HOST: "127.0.0.1", TROUPE_DATA_DIR: dataDir, LOG_LEVEL: "error", ...settings };
  const main = join(import.meta.dirname, "../../gateway/main.ts");
  return {
    base,
    dataDir,
    start: async () => {
      const child = spawn(process.execPath, [main], { env, stdio: ["ignore", "ignore", "inherit"] });
      await waitFor(async () => (await fetch(`${base}/readyz`)).ok, 30_000, "troupe to start");
      return child;
    },
  };
}

/** Sends `signal` and resolves when the process has exited. */
export async function killAndWait(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill(signal);
  await exited;
}
