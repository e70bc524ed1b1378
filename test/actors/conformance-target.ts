// The thing the conformance cases drive: replicas of the test actor app
// (test/support/dapr-actor-app.ts) started by the cluster library, on the
// embedded host or on real Dapr (daprd + placement + scheduler + Redis).
// Calls go through the app's host.call(), so errors make the whole trip
// (method → host → daprd → host → caller) before the cases inspect them.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Pool } from "undici";
import { z } from "zod";
import { LocalCluster, requireDaprPrerequisites, repoDir } from "../support/dapr-cluster.ts";

export const callResult = z.object({
  output: z.unknown().optional(),
  error: z
    .object({
      name: z.string(),
      code: z.string().optional(),
      status: z.number().optional(),
      message: z.string(),
      details: z.unknown().optional(),
    })
    .optional(),
});

export interface CallResult {
  status: number;
  output: unknown;
  error: z.infer<typeof callResult>["error"];
}

export interface ConformanceTarget {
  readonly mode: "embedded" | "dapr";
  readonly replicas: number;
  readonly idleTimeoutMs: number;
  readonly cluster: LocalCluster;
  /** With timeoutMs, a call that takes longer resolves with status 0 (outcome unknown). */
  call(id: string, method: string, input?: unknown, replica?: number, timeoutMs?: number): Promise<CallResult>;
  /** Active TestCounter actors in replica's process (all replicas when undefined). */
  active(replica?: number): Promise<number>;
  stop(): Promise<void>;
}

const activeList = z.array(z.object({ type: z.string(), count: z.number() }));

export async function startTarget(mode: "embedded" | "dapr", replicas: number, idleTimeoutMs = 2_000): Promise<ConformanceTarget> {
  if (mode === "dapr") {
    // Never skipped: missing Dapr binaries or Redis fail the run with the reason.
    requireDaprPrerequisites({ redisUrl: process.env.REDIS_URL });
  }
  const dataDir = mkdtempSync(join(tmpdir(), `troupe-actors-${mode}-`));
  const cluster = await LocalCluster.start({
    mode,
    replicas,
    dataDir,
    appEntry: join(repoDir, "test/support/dapr-actor-app.ts"),
    appEnv: { ACTOR_IDLE_TIMEOUT_MS: String(idleTimeoutMs), LOG_LEVEL: "warn" },
    ...(process.env.REDIS_URL ? { redisUrl: process.env.REDIS_URL } : {}),
    readyTimeoutMs: 90_000,
  });
  // A test run cut short (tap's timeout sends SIGTERM) still stops the cluster.
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.once(signal, () => void cluster.stop().finally(() => process.exit(1)));
  }
  const pools = cluster.replicas.map((r) => new Pool(r.gatewayUrl, { connections: 64, keepAliveTimeout: 10_000 }));
  const pool = (replica: number): Pool => {
    const p = pools[replica];
    if (!p) throw new Error(`no replica ${replica}`);
    return p;
  };
  return {
    mode,
    replicas,
    idleTimeoutMs,
    cluster,
    async call(id, method, input, replica = 0, timeoutMs) {
      try {
        const response = await pool(replica).request({
          method: "POST",
          path: `/call/TestCounter/${encodeURIComponent(id)}/${encodeURIComponent(method)}`,
          body: input === undefined ? "" : JSON.stringify(input),
          headersTimeout: 60_000,
          bodyTimeout: 60_000,
          ...(timeoutMs === undefined ? {} : { signal: AbortSignal.timeout(timeoutMs) }),
        });
        const parsed = callResult.parse(await response.body.json());
        return { status: response.statusCode, output: parsed.output, error: parsed.error };
      } catch (error) {
        if (timeoutMs === undefined) throw error;
        return { status: 0, output: undefined, error: { name: "Timeout", message: `no answer within ${timeoutMs} ms` } };
      }
    },
    async active(replica) {
      const counts = await Promise.all(
        (replica === undefined ? pools.map((_, i) => i) : [replica]).map(async (r) => {
          const response = await pool(r).request({ method: "GET", path: "/active" });
          const list = activeList.parse(await response.body.json());
          return list.find((a) => a.type === "TestCounter")?.count ?? 0;
        }),
      );
      return counts.reduce((a, b) => a + b, 0);
    },
    async stop() {
      await Promise.all(pools.map((p) => p.destroy()));
      await cluster.stop();
    },
  };
}
