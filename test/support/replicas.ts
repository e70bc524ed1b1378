// Several Troupe replicas on one fresh Redis, as the distributed tenancy
// store runs them: what a test of cross-replica behaviour (revocation,
// rate limits, CSRF, budgets) starts before it talks to them.
import type { RawEnv } from "../../core/config.ts";
import type { StartOptions } from "../../gateway/app.ts";
import { startTestRedis } from "./redis.ts";
import { startTestTroupe, type TestTroupe } from "./troupe.ts";

export interface TestReplicas {
  replicas: TestTroupe[];
  redisUrl: string;
  /** Stops every replica, then Redis. */
  stop(): Promise<void>;
}

/** `options` is asked once per replica, so each gets its own router (and what else must not be shared). */
export async function startReplicas(count: number, env: RawEnv = {}, options: () => StartOptions = () => ({})): Promise<TestReplicas> {
  const redis = await startTestRedis();
  const replicas: TestTroupe[] = [];
  for (let i = 0; i < count; i++) replicas.push(await startTestTroupe({ ...env, REDIS_URL: redis.url }, options()));
  return {
    replicas,
    redisUrl: redis.url,
    stop: async () => {
      for (const replica of replicas) await replica.stop();
      await redis.stop();
    },
  };
}
