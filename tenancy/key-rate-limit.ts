// Per-key limits: requests per minute and (when the key has one) input +
// output tokens per minute, each a fixed 60 s window counted in the data
// store, so on Redis every replica counts into the same window (an INCRBY in
// one script): a 1,000-requests/min key gets at most 1,000 admissions per
// window whatever the number of replicas. Synchronous when the store counts
// in process (embedded), so the hot path awaits nothing.
//
// Tokens are reserved as budgets reserve money: once an AI call's body is
// read, its estimate (gateway/token-estimate.ts) is added to the window at
// once (`reserveTokens`), refused with 429 when the window had already
// reached the limit, and settled when the call is billed (`record`: the
// actual tokens replace the estimate) or released if it never is. So a burst
// of concurrent calls sees each other's reservations: a 1,000-token key with
// 50 concurrent 200,000-token calls admits one, not 50. A call settled after
// its reservation's window ended counts its actual tokens into the new one.
//
// Batch lines have windows of their own (`batchLane`), of the key's sizes:
// a batch runs at most at its key's rates without taking its interactive
// calls' windows (OpenAI's batch limits are separate from the interactive
// ones too), so the key's own calls, the batch's polling among them, are
// never refused because a batch runs.
import type { Clock } from "../core/clock.ts";
import { TroupeError } from "../core/errors.ts";
import type { UsageRecord, UsageSink } from "../providers/usage.ts";
import type { DataStore } from "../core/data-store.ts";
import type { ApiKeyRecord } from "./types.ts";

const windowMs = 60_000;

/** Whose windows a call counts in: the key's interactive calls (""), or its batch lines. */
type Lane = "" | typeof batchLane;
const batchLane = "batch:";

/** The key's limits as its batch lines are counted against them (the shape admission's RateLimiter has, every part present). */
export interface BatchLaneLimits {
  checkRateLimit(record: ApiKeyRecord): RateLimitWindow | Promise<RateLimitWindow>;
  enterCall(record: ApiKeyRecord): (() => void) | undefined;
  reserveTokens(record: ApiKeyRecord, requestId: string, tokens: number): (() => void) | undefined | Promise<(() => void) | undefined>;
}

/** What the X-RateLimit-* headers report (requests; tokens when the key has a token limit). */
export interface RateLimitWindow {
  limit: number;
  remaining: number;
  resetSeconds: number;
  tokens?: { limit: number; remaining: number } | undefined;
}

interface Hit {
  count: number;
  resetInMs: number;
}

/** Retry-After of a call refused for max_concurrent: in-flight calls end on their own, so soon. */
const concurrencyRetryAfterSeconds = 1;

export class KeyLimits implements UsageSink {
  private readonly store: DataStore;
  /** Calls in flight per key with a max_concurrent, on this replica. */
  private readonly inFlight = new Map<string, number>();
  /** Keys with a token limit seen here: only their calls' tokens are counted (others pay nothing). */
  private readonly tokenLimited = new Set<string>();
  private readonly clock: Clock;
  /** Token reservations not yet settled, by request id (a request is billed on the replica that admitted it), with the window (interactive or batch) they are in. */
  private readonly held = new Map<string, { keyId: string; lane: Lane; tokens: number; windowEndsAt: number }>();

  constructor(store: DataStore, clock: Clock) {
    this.store = store;
    this.clock = clock;
  }

  /**
   * Reserves `tokens` (the call's estimate) in the key's token window, or
   * 429 with Retry-After when the window had already reached the key's
   * limit. Settled by the call's usage record (same request id); the
   * function returned releases what was never settled (call it as the
   * request ends). Undefined for a key without a token limit.
   */
  reserveTokens(record: ApiKeyRecord, requestId: string, tokens: number, lane: Lane = ""): (() => void) | undefined | Promise<(() => void) | undefined> {
    const limit = record.token_limit_per_minute;
    if (limit === null || tokens <= 0) return undefined;
    this.tokenLimited.add(record.id);
    const local = this.store.hitLocal;
    const counter = tokenKey(lane + record.id);
    const hit = local ? local.call(this.store, counter, windowMs, tokens) : this.store.hit(counter, windowMs, tokens);
    const decide = ({ count, resetInMs }: Hit): (() => void) => {
      if (count - tokens >= limit) {
        this.addTokens(lane + record.id, -tokens);
        throw new TroupeError("rate_limited", `token limit of ${limit} tokens per minute reached (this call would reserve about ${tokens})`, {
          retryAfterSeconds: Math.max(1, Math.ceil(resetInMs / 1000)),
        });
      }
      this.held.set(requestId, { keyId: record.id, lane, tokens, windowEndsAt: this.clock.now() + resetInMs });
      return () => this.settle(requestId, record.id, 0);
    };
    return hit instanceof Promise ? hit.then(decide) : decide(hit);
  }

  /** Replaces a request's reservation by `actual` tokens (0: released), in the window it was made in; else adds `actual` to the current one (of the reservation's lane; interactive without one). */
  private settle(requestId: string, keyId: string, actual: number): void {
    const hold = this.held.get(requestId);
    let delta = actual;
    let lane: Lane = "";
    if (hold && hold.keyId === keyId) {
      this.held.delete(requestId);
      lane = hold.lane;
      if (this.clock.now() < hold.windowEndsAt) delta -= hold.tokens;
    }
    if (delta !== 0) this.addTokens(lane + keyId, delta);
  }

  private addTokens(keyId: string, delta: number): void {
    if (this.store.hitLocal) this.store.hitLocal(tokenKey(keyId), windowMs, delta);
    else void this.store.hit(tokenKey(keyId), windowMs, delta).catch(() => undefined); // a lost count only loosens the limit
  }

  check(record: ApiKeyRecord, lane: Lane = ""): RateLimitWindow | Promise<RateLimitWindow> {
    const counterKey = lane + record.id; // key ids are unique and prefixed (key_…): no other counter shares them
    const tokenLimit = record.token_limit_per_minute;
    if (tokenLimit !== null) this.tokenLimited.add(record.id);
    const local = this.store.hitLocal;
    if (local) {
      const requests = local.call(this.store, counterKey, windowMs);
      return enforce(record, requests, tokenLimit === null ? undefined : local.call(this.store, tokenKey(counterKey), windowMs, 0));
    }
    const requests = this.store.hit(counterKey, windowMs);
    if (tokenLimit === null) return requests.then((hit) => enforce(record, hit, undefined));
    return Promise.all([requests, this.store.hit(tokenKey(counterKey), windowMs, 0)]).then(([hit, tokens]) => enforce(record, hit, tokens));
  }

  /** The same limits counted in windows of the key's batch lines, apart from its interactive calls' (see the top of this file). */
  batchLane(): BatchLaneLimits {
    return {
      checkRateLimit: (record) => this.check(record, batchLane),
      enterCall: (record) => this.enterCall(record, batchLane),
      reserveTokens: (record, requestId, tokens) => this.reserveTokens(record, requestId, tokens, batchLane),
    };
  }

  /**
   * Admits one more in-flight call of a key with a max_concurrent, or 429
   * with Retry-After; the answer ends it (call it once, when the request
   * ends). Undefined for a key without the limit. Counted per replica: the
   * limit bounds what one process holds open for the key.
   */
  enterCall(record: ApiKeyRecord, lane: Lane = ""): (() => void) | undefined {
    const max = record.max_concurrent;
    if (max === null) return undefined;
    const counted = lane + record.id;
    const current = this.inFlight.get(counted) ?? 0;
    if (current >= max) {
      throw new TroupeError("rate_limited", `this API key allows ${max} calls in flight at once (max_concurrent); wait for one to end`, {
        retryAfterSeconds: concurrencyRetryAfterSeconds,
        details: { max_concurrent: max },
      });
    }
    this.inFlight.set(counted, current + 1);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      const left = (this.inFlight.get(counted) ?? 1) - 1;
      if (left <= 0) this.inFlight.delete(counted);
      else this.inFlight.set(counted, left);
    };
  }

  /** Counts a billed call's tokens into its key's window (UsageSink: called as each call ends). */
  record(usage: UsageRecord): void {
    if (!this.tokenLimited.has(usage.api_key_id)) return;
    // The first record of a request settles its reservation; later ones (an agent turn's further calls) add theirs.
    this.settle(usage.request_id, usage.api_key_id, Math.max(0, usage.input_tokens + usage.output_tokens));
  }
}

function tokenKey(keyId: string): string {
  return `tok:${keyId}`;
}

function enforce(record: ApiKeyRecord, requests: Hit, tokens: Hit | undefined): RateLimitWindow {
  const window: RateLimitWindow = {
    limit: record.rate_limit_per_minute,
    remaining: Math.max(0, record.rate_limit_per_minute - requests.count),
    resetSeconds: Math.max(1, Math.ceil(requests.resetInMs / 1000)),
  };
  const tokenLimit = record.token_limit_per_minute;
  if (tokens && tokenLimit !== null) window.tokens = { limit: tokenLimit, remaining: Math.max(0, tokenLimit - tokens.count) };
  if (requests.count > record.rate_limit_per_minute) {
    throw new TroupeError("rate_limited", `rate limit of ${record.rate_limit_per_minute} requests per minute exceeded`, {
      retryAfterSeconds: window.resetSeconds,
      headers: rateLimitHeaders(window),
    });
  }
  if (tokens && tokenLimit !== null && tokens.count >= tokenLimit) {
    const resetSeconds = Math.max(1, Math.ceil(tokens.resetInMs / 1000));
    throw new TroupeError("rate_limited", `token limit of ${tokenLimit} tokens per minute reached`, { retryAfterSeconds: resetSeconds, headers: rateLimitHeaders(window) });
  }
  return window;
}

/** The X-RateLimit-* headers every API-key response carries (tokens ones when the key has a token limit). */
export function rateLimitHeaders(window: RateLimitWindow): [string, string][] {
  const headers: [string, string][] = [
    ["x-ratelimit-limit", String(window.limit)],
    ["x-ratelimit-remaining", String(window.remaining)],
    ["x-ratelimit-reset", String(window.resetSeconds)],
  ];
  if (window.tokens) headers.push(["x-ratelimit-limit-tokens", String(window.tokens.limit)], ["x-ratelimit-remaining-tokens", String(window.tokens.remaining)]);
  return headers;
}
