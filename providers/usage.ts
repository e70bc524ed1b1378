// The usage record every AI call emits, built in one
// place (UsageMeter) from the call's context. The billing work consumes
// these through a UsageSink; emitting must never delay or fail the response,
// so sinks are fire-and-forget and errors stay inside them.
import { z } from "zod";
import { inputParts, type Catalogue } from "./catalogue.ts";
import type { ChatExtras } from "./types.ts";

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
  /** Of input_tokens, those read from the provider's prompt cache (billed at the cached price); absent: 0. */
  cached_input_tokens?: number | undefined;
  /** Of input_tokens, those written to the prompt cache (billed at the cache-write price); absent: 0. */
  cache_write_input_tokens?: number | undefined;
  output_tokens: number;
  /** Per-unit categories (images, seconds); 0 for token-priced calls. */
  units: number;
  cost_usd: number;
  /** The same cost in integer nano-dollars: what the ledger sums (floats drift over millions of records). */
  cost_nanos: number;
  /** "hit": answered from Troupe's response cache, no provider call (priced at the cache price, 0 by default; docs/guides/caching.md). Absent: a provider call. */
  cache?: "hit" | undefined;
  /** true: the provider call was made with the organization's own provider credentials (bring your own key). Absent: Troupe's. */
  byok?: true | undefined;
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
  /** A chat call's prompt-cache counts (ChatResult/StreamFinish extras): parts of input_tokens. */
  extras?: Pick<ChatExtras, "cached_input_tokens" | "cache_write_input_tokens" | "byok"> | undefined;
  /** "hit": the answer came from the response cache (the record says so and costs the cache price, CACHE_HIT_PRICE_FRACTION; 0 by default). */
  cache?: "hit" | undefined;
  /** The call used the organization's own provider credentials (the router says so in the result's extras.byok too). */
  byok?: true | undefined;
}

/**
 * A BYOK call's default price, as a fraction of the catalogue price: 0, since
 * the provider bills the organization for it directly (BYOK_PRICE_FRACTION
 * sets another; docs/operations/byok.md).
 */
export const defaultByokPriceFraction = 0;

/**
 * A response-cache hit's default price, as a fraction of the catalogue price
 * of the tokens it stands for: 0, no provider was called (CACHE_HIT_PRICE_FRACTION
 * sets another; docs/guides/caching.md, "Pricing").
 */
export const defaultCacheHitPriceFraction = 0;

export function usageRecord(
  catalogue: Catalogue,
  context: UsageContext,
  category: UsageCategory,
  call: UsageFigures,
  nowMs: number,
  byokPriceFraction = defaultByokPriceFraction,
  cacheHitPriceFraction = defaultCacheHitPriceFraction,
): UsageRecord {
  const output = call.output_tokens ?? 0;
  const units = call.units ?? 0;
  const { cached, written } = inputParts({ input_tokens: call.input_tokens, cached_input_tokens: call.extras?.cached_input_tokens, cache_write_input_tokens: call.extras?.cache_write_input_tokens });
  // Test keys reach the same providers but are recorded unbilled (docs/api/keys.md).
  const byok = call.byok ?? call.extras?.byok;
  // A cache hit made no provider call: the cache price, whatever key the stored answer was made with.
  const fraction = call.cache === "hit" ? cacheHitPriceFraction : byok ? byokPriceFraction : 1;
  const listUsd = context.live && fraction > 0
    ? catalogue.priceOf(call.model, { input_tokens: call.input_tokens, cached_input_tokens: cached, cache_write_input_tokens: written, output_tokens: output, units })
    : 0;
  // A fraction is rounded to the nano-dollar again, so cost_usd and cost_nanos stay the same amount.
  const costUsd = fraction === 1 ? listUsd : Math.round(listUsd * fraction * 1e9) / 1e9;
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
    // Only when there are some: a record without them is the shape every earlier record has.
    ...(cached > 0 ? { cached_input_tokens: cached } : {}),
    ...(written > 0 ? { cache_write_input_tokens: written } : {}),
    output_tokens: output,
    units,
    cost_usd: costUsd,
    // priceOf rounds to the nano-dollar, so this recovers its integer exactly.
    cost_nanos: Math.round(costUsd * 1e9),
    ...(call.cache ? { cache: call.cache } : {}),
    ...(byok ? { byok } : {}),
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
  private readonly byokPriceFraction: number;
  private readonly cacheHitPriceFraction: number;

  /**
   * `byokPriceFraction`: BYOK_PRICE_FRACTION, what a call with the organization's own key is billed of the catalogue price;
   * `cacheHitPriceFraction`: CACHE_HIT_PRICE_FRACTION, the same for an answer from the response cache.
   */
  constructor(catalogue: Catalogue, sink: UsageSink, now: () => number = Date.now, byokPriceFraction = defaultByokPriceFraction, cacheHitPriceFraction = defaultCacheHitPriceFraction) {
    this.catalogue = catalogue;
    this.sink = sink;
    this.now = now;
    this.byokPriceFraction = byokPriceFraction;
    this.cacheHitPriceFraction = cacheHitPriceFraction;
  }

  /** The priced record of a call, for callers that bill it themselves (a reserved call settles its reservation with it). */
  build(context: UsageContext, category: UsageCategory, call: UsageFigures): UsageRecord {
    return usageRecord(this.catalogue, context, category, call, this.now(), this.byokPriceFraction, this.cacheHitPriceFraction);
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
    return this.emitGrouped(usageRecord(this.catalogue, context, category, call, this.now(), this.byokPriceFraction, this.cacheHitPriceFraction));
  }

  /** Records one call; a call without a context (a session, not an API key) is not billed. Never throws. */
  record(context: UsageContext | undefined, category: UsageCategory, call: UsageFigures): void {
    if (!context) return;
    try {
      this.sink.record(usageRecord(this.catalogue, context, category, call, this.now(), this.byokPriceFraction, this.cacheHitPriceFraction));
    } catch {
      // A billing sink problem must not fail an answered request; the sink logs its own errors.
    }
  }
}
