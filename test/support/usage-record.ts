// A usage record as the meter writes one (providers/usage.ts): the ledger
// tests append these, the meter's tests compare what it wrote against one.
// Each call without a request_id gets a fresh one (unique across processes
// sharing a Redis), and the usage key defaults to the request id, as for a
// single model call.
import type { UsageRecord } from "../../providers/usage.ts";

let n = 0;
export function usageRecord(overrides: Partial<UsageRecord> = {}): UsageRecord {
  n += 1;
  const request_id = overrides.request_id ?? `req_${process.pid}_${n}`;
  return {
    organization_id: "org_1",
    project_id: "prj_1",
    environment_id: "env_1",
    api_key_id: "key_1",
    live: true,
    category: "chat",
    model: "gpt-4.1-mini",
    provider: "openai",
    input_tokens: 10,
    output_tokens: 5,
    units: 0,
    cost_usd: 0.000001,
    cost_nanos: 1000,
    request_id,
    usage_key: overrides.usage_key ?? request_id,
    created_at: "2026-03-15T10:00:00.000Z",
    ...overrides,
  };
}
