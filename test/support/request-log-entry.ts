// A request-log entry for store tests: one successful chat call of org_a's
// key_a, with every field a test does not name at a plain default.
import type { RequestLogEntry } from "../../tenancy/request-log-entry.ts";

export function logEntry(requestId: string, createdMs: number, over: Partial<RequestLogEntry> = {}): RequestLogEntry {
  const status = over.status ?? 200;
  return {
    request_id: requestId,
    created_ms: createdMs,
    organization_id: "org_a",
    project_id: "prj_a",
    environment_id: "env_a",
    api_key_id: "key_a",
    live: true,
    method: "POST",
    route: "/v1/chat/completions",
    model: "gpt-4.1-mini",
    provider: "openai",
    deployment: null,
    status,
    error_code: status === 200 ? null : "provider_error",
    latency_ms: 3,
    ttfb_ms: 2,
    input_tokens: 10,
    output_tokens: 5,
    cached_input_tokens: 0,
    cost_nanos: 1000,
    cache: null,
    byok: null,
    ...over,
  };
}
