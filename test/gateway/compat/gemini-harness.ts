// An embedded Troupe (info-level log captured, for the request-line checks)
// whose router points at the OpenAI, Anthropic and Gemini fakes, with real
// billing, a project with a live key, and helpers to call its /gemini mount
// over real sockets.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../../../core/log.ts";
import { startTroupe } from "../../../gateway/app.ts";
import { loadConfig } from "../../../gateway/config.ts";
import type { FakeServer } from "../../fakes/fake-server.ts";
import { projectWithLiveKey } from "../../support/billing.ts";
import { startFakeProviders } from "../../support/fake-providers.ts";
import { request, signup, type RequestOptions, type TestResponse } from "../../support/troupe.ts";

/** One text model of each provider with a fake, and an embedding model: any of them answers Google's SDKs. */
export const models = { gemini: "gemini-2.5-flash", anthropic: "claude-haiku-4-5", openai: "gpt-4.1-mini" } as const;
export const embeddingModel = "text-embedding-3-small";

export interface GeminiHarness {
  url: string;
  port: number;
  fakes: { openai: FakeServer; anthropic: FakeServer; gemini: FakeServer };
  session: string;
  orgId: string;
  productionEnvId: string;
  liveKey: string;
  /** Any request to this Troupe (path from the root). */
  request(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
  /** POST or GET on the mount (path after /gemini), the key as x-goog-api-key unless `headers` says otherwise. */
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<TestResponse>;
  /** The request log's lines so far (JSON). */
  logLines(): Record<string, unknown>[];
  providerCalls(): number;
  stop(): Promise<void>;
}

export async function startGeminiHarness(): Promise<GeminiHarness> {
  const providers = await startFakeProviders(["openai", "anthropic", "gemini"]);
  const { router, fakes, env } = providers;
  const lines: string[] = [];
  const config = loadConfig({ LOG_LEVEL: "info", HOST: "127.0.0.1", PORT: "0", SHUTDOWN_GRACE_MS: "2000", SIGNUP_LIMIT_PER_ADDRESS: "1000000", ...env, TROUPE_DATA_DIR: mkdtempSync(join(tmpdir(), "troupe-gemini-")) });
  const running = await startTroupe(config, createLogger("info", {}, (line) => lines.push(line)), { router });
  const url = `http://127.0.0.1:${running.port}`;
  const requester = { request: (method: string, path: string, opts = {}) => request(url, method, path, opts) };
  const user = await signup(requester, "gemini-mount");
  const project = await projectWithLiveKey(requester, user.token, user.orgId, "gemini-mount");
  return {
    url,
    port: running.port,
    fakes,
    session: user.token,
    orgId: user.orgId,
    productionEnvId: project.productionEnvId,
    liveKey: project.liveKey,
    request: (method, path, options) => request(url, method, path, options),
    call: (method, path, body, headers) => request(url, method, `/gemini${path}`, { body, headers: headers ?? { "x-goog-api-key": project.liveKey } }),
    logLines: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>),
    providerCalls: () => fakes.openai.requests.length + fakes.anthropic.requests.length + fakes.gemini.requests.length,
    stop: async () => {
      await running.stop();
      await providers.close();
    },
  };
}
