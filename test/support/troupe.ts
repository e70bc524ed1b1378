// Starts a real Troupe (uWS on a free loopback port) inside the test
// process, plus a tiny HTTP client, so tests talk to it over real sockets.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RawEnv } from "../../core/config.ts";
import { loadConfig } from "../../gateway/config.ts";
import { createLogger } from "../../core/log.ts";
import { startTroupe, type RunningTroupe, type StartOptions } from "../../gateway/app.ts";

export interface TestTroupe extends RunningTroupe {
  dataDir: string;
  request(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
}

export interface RequestOptions {
  token?: string;
  body?: unknown;
  rawBody?: string | Uint8Array;
  headers?: Record<string, string>;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  body: unknown;
  text: string;
}

export async function startTestTroupe(env: RawEnv = {}, options: StartOptions = {}): Promise<TestTroupe> {
  const dataDir = env["TROUPE_DATA_DIR"] ?? mkdtempSync(join(tmpdir(), "troupe-test-"));
  // The per-address signup limit is lifted unless a test sets it: every test signs up from 127.0.0.1,
  // and on CI's one shared Redis the counter would be shared by every test file (signup-throttle.test.ts tests it).
  const config = loadConfig({ LOG_LEVEL: "warn", HOST: "127.0.0.1", PORT: "0", SHUTDOWN_GRACE_MS: "2000", SIGNUP_LIMIT_PER_ADDRESS: "1000000", ...env, TROUPE_DATA_DIR: dataDir });
  const troupe = await startTroupe(config, createLogger(config.logLevel), options);
  const base = `http://127.0.0.1:${troupe.port}`;
  return {
    ...troupe,
    dataDir,
    request: (method, path, opts = {}) => request(base, method, path, opts),
  };
}

export async function request(base: string, method: string, path: string, opts: RequestOptions = {}): Promise<TestResponse> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers["authorization"] = `Bearer ${opts.token}`;
  let body: string | Uint8Array | undefined = opts.rawBody;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers["content-type"] ??= "application/json";
  }
  const res = await fetch(base + path, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = undefined;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

/** Reads a nested field of an unknown JSON body, for assertions. */
export function field(value: unknown, ...path: (string | number)[]): unknown {
  let current: unknown = value;
  for (const key of path) {
    if (current === null || typeof current !== "object") return undefined;
    current = (current as Record<string | number, unknown>)[key];
  }
  return current;
}

export function str(value: unknown, ...path: (string | number)[]): string {
  const v = field(value, ...path);
  if (typeof v !== "string") throw new Error(`expected a string at ${path.join(".")}, got ${JSON.stringify(v)}`);
  return v;
}

let counter = 0;
/** Signs up a fresh user; returns its session token and the ids of what signup created. */
export async function signup(troupe: { request: TestTroupe["request"] }, label = "user") {
  counter += 1;
  const email = `${label}-${counter}-${Date.now()}@example.test`;
  const res = await troupe.request("POST", "/v1/auth/signup", { body: { email, password: "correct horse battery", name: label } });
  if (res.status !== 201) throw new Error(`signup failed: ${res.status} ${res.text}`);
  return {
    email,
    token: str(res.body, "session_token"),
    csrf: str(res.body, "csrf_token"),
    orgId: str(res.body, "organization", "id"),
    projectId: str(res.body, "project", "id"),
    productionEnvId: str(res.body, "environments", 0, "environment", "id"),
    developmentEnvId: str(res.body, "environments", 1, "environment", "id"),
    testKey: str(res.body, "environments", 1, "test_key", "key"),
    body: res.body,
  };
}
