// The usage record the billing and journal benches write: one gpt-4.1-mini
// chat call (12 tokens in, 8 out), for the owner and request id the bench
// chooses. One shape for all of them, so their per-record figures measure
// the same bytes.
import type { UsageRecord } from "../../providers/usage.ts";

/** Who a record bills; `fixedOwner` is a constant one (ULID-shaped ids, the length real ids have). */
export type UsageOwner = Pick<UsageRecord, "organization_id" | "project_id" | "environment_id" | "api_key_id">;

export const fixedOwner: UsageOwner = {
  organization_id: "org_01M89DWYQEKVNEHJF98R817FXN",
  project_id: "prj_01M89DWYQEKVNEHJF98R817FXP",
  environment_id: "env_01M89DWYQEKVNEHJF98R817FXQ",
  api_key_id: "key_01M89DWYQEKVNEHJF98R817FXR",
};

/** A chat usage record; `createdAt` defaults to now (a fixed time keeps a serializing bench's text identical across runs). */
export function chatUsageRecord(owner: UsageOwner, requestId: string, createdAt = new Date().toISOString()): UsageRecord {
  return {
    ...owner,
    live: true,
    category: "chat",
    model: "gpt-4.1-mini",
    provider: "openai",
    input_tokens: 12,
    output_tokens: 8,
    units: 0,
    cost_usd: 0.0000176,
    cost_nanos: 17_600,
    request_id: requestId,
    usage_key: requestId,
    created_at: createdAt,
  };
}
