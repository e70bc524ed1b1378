// Billing tests' helpers: Troupe instances whose router points at the OpenAI
// fake (so the fake's request log counts provider calls), a publisher that
// records the events it is given, and the account steps (a project with a
// live key, a budget) over real HTTP.
import { loadConfig } from "../../gateway/config.ts";
import type { EventPublisher, OrganizationEvent } from "../../core/organization-events.ts";
import { createRouter, type RouterFactory } from "../../providers/index.ts";
import { startOpenAIFake } from "../fakes/openai-fake.ts";
import type { FakeServer } from "../fakes/fake-server.ts";
import { str, type TestTroupe } from "./troupe.ts";

export interface RecordingPublisher extends EventPublisher {
  events: OrganizationEvent[];
}

export function recordingPublisher(): RecordingPublisher {
  const events: OrganizationEvent[] = [];
  return { events, publish: async (event) => void events.push(event) };
}

/**
 * `providerTimeoutMs`: longer for thousands of concurrent calls in one test process (they queue in its event loop).
 * `router()`: what a Troupe builds its router with (StartOptions.router), each Troupe its own router.
 */
export async function startFakeOpenAI(providerTimeoutMs = 5000): Promise<{ fake: FakeServer; router: () => RouterFactory }> {
  const fake = await startOpenAIFake({ apiKey: "sk-fake" });
  const config = loadConfig({ OPENAI_API_KEY: "sk-fake", OPENAI_BASE_URL: `${fake.url}/v1`, PROVIDER_TIMEOUT_MS: String(providerTimeoutMs) });
  return { fake, router: () => (wiring) => createRouter(config.providers, { backoff: { initialDelayMs: 5, maxDelayMs: 20 }, ...wiring }) };
}

type Requester = Pick<TestTroupe, "request">;

/** A new project in `orgId` with a live key on its production environment; the development environment's test key too. */
export async function projectWithLiveKey(troupe: Requester, session: string, orgId: string, name = "billing") {
  const created = await troupe.request("POST", `/v1/orgs/${orgId}/projects`, { token: session, body: { name } });
  if (created.status !== 201) throw new Error(`project: ${created.status} ${created.text}`);
  const projectId = str(created.body, "project", "id");
  const productionEnvId = str(created.body, "environments", 0, "environment", "id");
  const testKey = str(created.body, "environments", 1, "test_key", "key");
  const key = await troupe.request("POST", `/v1/environments/${productionEnvId}/api-keys`, {
    token: session,
    body: { name: "live", live: true, rate_limit_per_minute: 1_000_000 },
  });
  if (key.status !== 201) throw new Error(`key: ${key.status} ${key.text}`);
  return { projectId, productionEnvId, liveKey: str(key.body, "key"), liveKeyId: str(key.body, "id"), testKey };
}

export const hello = { model: "gpt-4.1-mini", routing_strategy: "manual", messages: [{ role: "user", content: "hello there" }] };

/** Polls `read` until `done` holds (usage is written off the request path) or fails after `ms`. */
export async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, ms = 10_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > until) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
