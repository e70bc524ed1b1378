// Starts Troupe over real sockets with the AI routes wired to a router whose
// providers are the fakes (OpenAI, Anthropic, Gemini, Cohere, an
// openai-compatible endpoint) plus the simulated provider; records usage.
import type { Router } from "../../../providers/router.ts";
import { UsageMeter, type UsageRecord } from "../../../providers/usage.ts";
import { chatRoutes } from "../../../gateway/routes/chat.ts";
import { embeddingRoutes } from "../../../gateway/routes/embeddings.ts";
import { modelRoutes } from "../../../gateway/routes/models.ts";
import { translationRoutes } from "../../../gateway/routes/translations.ts";
import { visionRoutes } from "../../../gateway/routes/vision.ts";
import type { FakeServer } from "../../fakes/fake-server.ts";
import { allFakeProviders, startFakeProviders } from "../../support/fake-providers.ts";
import { signup, startTestTroupe, type TestTroupe } from "../../support/troupe.ts";

export interface AiHarness {
  troupe: TestTroupe;
  router: Router;
  usage: UsageRecord[];
  key: string;
  fakes: { openai: FakeServer; anthropic: FakeServer; gemini: FakeServer; cohere: FakeServer; compatible: FakeServer };
  stop(): Promise<void>;
}

export async function startAiHarness(): Promise<AiHarness> {
  const providers = await startFakeProviders(allFakeProviders);
  const { fakes } = providers;
  // The extra routes' own router over the fakes: not the Troupe's, so no attempt observer and no organization's own keys.
  const router = providers.router({});
  const usage: UsageRecord[] = [];
  const deps = { router, usage: new UsageMeter(router.catalogue, { record: (u: UsageRecord) => void usage.push(u) }) };
  const troupe = await startTestTroupe({}, {
    extraRoutes: () => [...chatRoutes(deps), ...modelRoutes(deps), ...embeddingRoutes(deps), ...visionRoutes(deps), ...translationRoutes(deps)],
  });
  const user = await signup(troupe, "ai");
  return {
    troupe,
    router,
    usage,
    key: user.testKey,
    fakes,
    stop: async () => {
      await troupe.stop();
      await router.close();
      await providers.close();
    },
  };
}

export interface SseResult {
  status: number;
  contentType: string | null;
  events: Record<string, unknown>[];
  done: boolean;
  raw: string;
}

/** POSTs and reads a text/event-stream answer into its JSON events. */
export async function postSse(h: AiHarness, path: string, body: unknown): Promise<SseResult> {
  const res = await fetch(`http://127.0.0.1:${h.troupe.port}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${h.key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const raw = await res.text();
  const events: Record<string, unknown>[] = [];
  let done = false;
  for (const frame of raw.split("\n\n")) {
    if (!frame.startsWith("data: ")) continue;
    const data = frame.slice(6);
    if (data === "[DONE]") done = true;
    else events.push(JSON.parse(data) as Record<string, unknown>);
  }
  return { status: res.status, contentType: res.headers.get("content-type"), events, done, raw };
}
