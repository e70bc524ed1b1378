// One Troupe for a benchmark: the real gateway (embedded host) as a child
// process on a free port with its own data directory, warned-only logs and a
// rate limit no benchmark reaches, plus a signed-up user and its test key.
// `stop` ends the child and removes the data directory.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repoDir } from "../../test/support/dapr-cluster.ts";
import { freePort, waitFor } from "../../test/support/net.ts";
import { request, signup } from "../../test/support/troupe.ts";

export interface EmbeddedTroupe {
  base: string;
  dataDir: string;
  /** A request to this Troupe (the tests' helper, bound to its base URL). */
  request(method: string, path: string, opts?: Parameters<typeof request>[3]): ReturnType<typeof request>;
  user: Awaited<ReturnType<typeof signup>>;
  stop(): void;
}

/** `name`: the data directory's prefix and the signed-up user's name; `env`: the benchmark's own settings. */
export async function startEmbeddedTroupe(name: string, env: (dataDir: string) => Record<string, string>): Promise<EmbeddedTroupe> {
  const dataDir = mkdtempSync(join(tmpdir(), `troupe-${name}-`));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [join(repoDir, "gateway/main.ts")], {
    env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", TROUPE_DATA_DIR: dataDir, LOG_LEVEL: "warn", DEFAULT_RATE_LIMIT_PER_MINUTE: "10000000", ...env(dataDir) },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const stop = () => {
    child.kill("SIGTERM");
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await waitFor(async () => (await fetch(`${base}/readyz`)).ok, 30_000, "troupe to start");
    const r = (method: string, path: string, opts?: Parameters<typeof request>[3]) => request(base, method, path, opts);
    const user = await signup({ request: r }, name);
    return { base, dataDir, request: r, user, stop };
  } catch (error) {
    stop();
    throw error;
  }
}
