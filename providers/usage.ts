// The usage record every AI call emits (issue: usage events). The billing
// work consumes these through a UsageSink; emitting must never delay or fail
// the response, so sinks are fire-and-forget and errors stay inside them.
import type { Catalogue } from "./catalogue.ts";

export type UsageCategory = "chat" | "embeddings" | "vision" | "translation" | "images" | "audio" | "video" | "agents";

export interface UsageRecord {
  organization_id: string;
  project_id: string;
  environment_id: string;
  api_key_id: string;
  /** Live keys are billed; test keys are recorded unbilled. */
  live: boolean;
  category: UsageCategory;
  model: string;
  provider: string;
  input_tokens: number;
  output_tokens: number;
  /** Per-unit categories (images, seconds); 0 for token-priced calls. */
  units: number;
  cost_usd: number;
  request_id: string;
  created_at: string;
}

export interface UsageSink {
  record(usage: UsageRecord): void;
}

/** Discards records: for tests and for callers that do not bill. */
export const noUsage: UsageSink = { record: () => undefined };

export interface Payer {
  organization_id: string;
  project_id: string;
  environment_id: string;
  api_key_id: string;
  live: boolean;
}

export function usageRecord(
  catalogue: Catalogue,
  payer: Payer,
  call: { category: UsageCategory; model: string; provider: string; input_tokens: number; output_tokens?: number; units?: number; request_id: string },
  nowMs: number = Date.now(),
): UsageRecord {
  const output = call.output_tokens ?? 0;
  const units = call.units ?? 0;
  return {
    ...payer,
    category: call.category,
    model: call.model,
    provider: call.provider,
    input_tokens: call.input_tokens,
    output_tokens: output,
    units,
    cost_usd: catalogue.priceOf(call.model, { input_tokens: call.input_tokens, output_tokens: output, units }),
    request_id: call.request_id,
    created_at: new Date(nowMs).toISOString(),
  };
}

/** Hands the record over without letting a sink's failure reach the caller. */
export function emitUsage(sink: UsageSink, record: UsageRecord): void {
  try {
    sink.record(record);
  } catch {
    // A billing sink problem must not fail an answered request; the sink logs its own errors.
  }
}
