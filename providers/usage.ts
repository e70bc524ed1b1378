// The usage record every AI call emits, built in one
// place (UsageMeter) from the call's context. The billing work consumes
// these through a UsageSink; emitting must never delay or fail the response,
// so sinks are fire-and-forget and errors stay inside them.
import { z } from "zod";
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
  /** The same cost in integer nano-dollars: what the ledger sums (floats drift over millions of records). */
  cost_nanos: number;
  request_id: string;
  /**
   * The ledger's idempotency key: the request id, plus the call's number when
   * one request makes several billed calls (an agent turn's model calls), so
   * a retried or replayed record is billed once and distinct calls never merge.
   */
  usage_key: string;
  created_at: string;
}

export interface UsageSink {
  record(usage: UsageRecord): void;
  /**
   * As record, for a caller that answers its call only after the returned
   * promise settles (it never rejects): a sink may then group the record's
   * durable write with others (tenancy/usage-recorder.ts). Absent or
   * undefined: nothing to wait for.
   */
  recordGrouped?(usage: UsageRecord): Promise<void> | undefined;
}

/** `sink.recordGrouped`, or `record` for a sink that does not group (nothing to wait for then). */
export function recordGroupedIn(sink: UsageSink, usage: UsageRecord): Promise<void> | undefined {
  if (sink.recordGrouped) return sink.recordGrouped(usage);
  sink.record(usage);
  return undefined;
}

/** Discards records: for tests and for callers that do not bill. */
export const noUsage: UsageSink = { record: () => undefined };

/** Who pays for a call: the calling API key and where it belongs (also part of actor inputs, hence the schema). */
export const payerSchema = z.object({
  organization_id: z.string(),
  project_id: z.string(),
  environment_id: z.string(),
  api_key_id: z.string(),
  live: z.boolean(),
});
export type Payer = z.infer<typeof payerSchema>;

/**
 * The context a call's usage is recorded from: its payer and its request id
 * (the id billing deduplicates records by, so a retried delivery of the same
 * record is counted once).
 */
export interface UsageContext extends Payer {
  request_id: string;
  /** Numbers the billed calls of one request (an agent turn's model calls); absent for one-call requests. */
  call?: number | undefined;
}

/** What the call itself reports; chat, embedding, vision and translation results all fit as they are. */
export interface UsageFigures {
  model: string;
  provider: string;
  input_tokens: number;
  output_tokens?: number | undefined;
  units?: number | undefined;
}

export function usageRecord(catalogue: Catalogue, context: UsageContext, category: UsageCategory, call: UsageFigures, nowMs: number): UsageRecord {
  const output = call.output_tokens ?? 0;
  const units = call.units ?? 0;
  // Test keys reach the same providers but are recorded unbilled (docs/api/keys.md).
  const costUsd = context.live ? catalogue.priceOf(call.model, { input_tokens: call.input_tokens, output_tokens: output, units }) : 0;
  return {
    organization_id: context.organization_id,
    project_id: context.project_id,
    environment_id: context.environment_id,
    api_key_id: context.api_key_id,
    live: context.live,
    category,
    model: call.model,
    provider: call.provider,
    input_tokens: call.input_tokens,
    output_tokens: output,
    units,
    cost_usd: costUsd,
    // priceOf rounds to the nano-dollar, so this recovers its integer exactly.
    cost_nanos: Math.round(costUsd * 1e9),
    request_id: context.request_id,
    usage_key: context.call === undefined ? context.request_id : `${context.request_id}#${context.call}`,
    created_at: new Date(nowMs).toISOString(),
  };
}

/**
 * The one place usage is recorded: every answered AI call (HTTP routes and
 * agent turns) hands its context and figures here. Prices come from the
 * catalogue; the record goes to the sink fire-and-forget.
 */
export class UsageMeter {
  private readonly catalogue: Catalogue;
  private readonly sink: UsageSink;
  private readonly now: () => number;

  constructor(catalogue: Catalogue, sink: UsageSink, now: () => number = Date.now) {
    this.catalogue = catalogue;
    this.sink = sink;
    this.now = now;
  }

  /** The priced record of a call, for callers that bill it themselves (a reserved call settles its reservation with it). */
  build(context: UsageContext, category: UsageCategory, call: UsageFigures): UsageRecord {
    return usageRecord(this.catalogue, context, category, call, this.now());
  }

  /** Hands an already built record to the sink (a settled call: the ledger ignores the repeat, other sinks count it). Never throws. */
  emit(record: UsageRecord): void {
    try {
      this.sink.record(record);
    } catch {
      // As in record(): the sink logs its own errors.
    }
  }

  /** As emit, for a caller that answers only after the returned promise (UsageSink.recordGrouped). Never rejects. */
  emitGrouped(record: UsageRecord): Promise<void> | undefined {
    try {
      return recordGroupedIn(this.sink, record);
    } catch {
      // As in record(): the sink logs its own errors.
      return undefined;
    }
  }

  /** As record, for a caller that answers only after the returned promise (UsageSink.recordGrouped). Never rejects. */
  recordGrouped(context: UsageContext | undefined, category: UsageCategory, call: UsageFigures): Promise<void> | undefined {
    if (!context) return undefined;
    return this.emitGrouped(usageRecord(this.catalogue, context, category, call, this.now()));
  }

  /** Records one call; a call without a context (a session, not an API key) is not billed. Never throws. */
  record(context: UsageContext | undefined, category: UsageCategory, call: UsageFigures): void {
    if (!context) return;
    try {
      this.sink.record(usageRecord(this.catalogue, context, category, call, this.now()));
    } catch {
      // A billing sink problem must not fail an answered request; the sink logs its own errors.
    }
  }
}
