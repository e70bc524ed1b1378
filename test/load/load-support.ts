// Shared by the load driver's tests: an embedded Troupe with metrics on, a
// key with a limit no short run reaches, and the driver run as a child
// process, the way a user runs it.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { startTestTroupe, signup, str, type TestTroupe } from "../support/troupe.ts";
import { parsePrometheus, type Sample } from "../support/prometheus-text.ts";

export const cli = join(import.meta.dirname, "..", "..", "load", "cli.ts");

/** The Troupe, a key, and the request id of every billed call (to check the report's request ids are Troupe's own). */
export async function troupeWithKey(env: Record<string, string> = {}): Promise<{ troupe: TestTroupe; url: string; key: string; billedRequestIds: Set<string> }> {
  const billedRequestIds = new Set<string>();
  const troupe = await startTestTroupe({ METRICS_PORT: "0", METRICS_HOST: "127.0.0.1", ...env }, { usage: { record: (u) => void billedRequestIds.add(u.request_id) } });
  const user = await signup(troupe, "load");
  const res = await troupe.request("POST", `/v1/environments/${user.developmentEnvId}/api-keys`, { token: user.token, body: { name: "load", rate_limit_per_minute: 10_000_000 } });
  if (res.status !== 201) throw new Error(`key creation failed: ${res.status} ${res.text}`);
  return { troupe, url: `http://127.0.0.1:${troupe.port}`, key: str(res.body, "key"), billedRequestIds };
}

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export function runCli(args: readonly string[]): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(process.execPath, [cli, ...args], { encoding: "utf8", timeout: 60_000 }, (error, stdout, stderr) => {
      const code = error && typeof error.code === "number" ? error.code : error ? -1 : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

export async function metrics(troupe: TestTroupe): Promise<Sample[]> {
  const res = await fetch(`http://127.0.0.1:${troupe.metricsPort}/metrics`);
  return parsePrometheus(await res.text());
}
