// The harness of the video budget tests (test/jobs/video-budget.test.ts,
// test/jobs/video-key-budget.test.ts): an embedded Troupe whose video
// provider is the Luma fake (ray-2: 5 s clips at $0.14/s, $0.70 a scene)
// and whose OpenAI is the media fake, with one signed-up user; stopped at
// the test's teardown.
import t from "tap";
import { startMediaFake } from "../fakes/media-fakes.ts";
import { startLumaFake } from "../fakes/video-fakes.ts";
import { signup, startTestTroupe } from "./troupe.ts";

/** ray-2: 5 s × $0.14. */
export const sceneNanos = 700_000_000;

/** A 5-second ray-2 job, routed to Luma by name. */
export const ray2 = (prompt: string, extra: Record<string, unknown> = {}) => ({ model: "ray-2", routing_strategy: "manual", duration_seconds: 5, prompt, ...extra });

export async function startVideoBudgetTroupe(label: string, env: Record<string, string> = {}) {
  const luma = await startLumaFake("luma-key");
  const media = await startMediaFake({ openaiKey: "sk-o" });
  const troupe = await startTestTroupe({
    LUMA_API_KEY: "luma-key",
    LUMA_BASE_URL: luma.url,
    OPENAI_API_KEY: "sk-o",
    OPENAI_BASE_URL: `${media.url}/v1`,
    VIDEO_POLL_INTERVAL_MS: "50",
    JOB_WATCHDOG_MS: "1000",
    OUTBOUND_ALLOW_HOSTS: "127.0.0.1",
    ...env,
  });
  t.teardown(async () => {
    await troupe.stop();
    await luma.close();
    await media.close();
  });
  const user = await signup(troupe, label);
  /** How many scenes whose prompt starts with `prefix` reached the provider. */
  const submitted = (prefix: string) => [...luma.tasks.values()].filter((task) => task.prompt.startsWith(prefix)).length;
  return { luma, media, troupe, user, submitted };
}
