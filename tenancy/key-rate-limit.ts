// Per-key limits: requests per minute and (when the key has one) input +
// output tokens per minute, each a fixed 60 s window counted in the data
// store, so on Redis every replica counts into the same window (an INCRBY in
// one script): a 1,000-requests/min key gets at most 1,000 admissions per
// window whatever the number of replicas. Synchronous when the store counts
// in process (embedded), so the hot path awaits nothing.
//
// Tokens are known only once a call ends: admission refuses while the
// window's tokens have reached the limit, and each call adds its tokens when
// it is billed (`count`). A burst admitted together may pass the limit by
// the calls in flight — the same rule as budgets.
import { TroupeError } from "../core/errors.ts";
import type { UsageRecord, UsageSink } from "../providers/usage.ts";
import type { DataStore } from "../core/data-store.ts";
import type { ApiKeyRecord } from "./types.ts";

const windowMs = 60_000;

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

export class KeyLimits implements UsageSink {
  private readonly store: DataStore;
  /** Keys with a token limit seen here: only their calls' tokens are counted (others pay nothing). */
  private readonly tokenLimited = new Set<string>();

  constructor(store: DataStore) {
    this.store = store;
  }

  check(record: ApiKeyRecord): RateLimitWindow | Promise<RateLimitWindow> {
    const counterKey = record.id; // key ids are unique and prefixed (key_…): no other counter shares them
    const tokenLimit = record.token_limit_per_minute;
    if (tokenLimit !== null) this.tokenLimited.add(record.id);
    const local = this.store.hitLocal;
    if (local) {
      const requests = local.call(this.store, counterKey, windowMs);
      return enforce(record, requests, tokenLimit === null ? undefined : local.call(this.store, tokenKey(record.id), windowMs, 0));
    }
    const requests = this.store.hit(counterKey, windowMs);
    if (tokenLimit === null) return requests.then((hit) => enforce(record, hit, undefined));
    return Promise.all([requests, this.store.hit(tokenKey(record.id), windowMs, 0)]).then(([hit, tokens]) => enforce(record, hit, tokens));
  }

  /** Counts a billed call's tokens into its key's window (UsageSink: called as each call ends). */
  record(usage: UsageRecord): void {
    if (!this.tokenLimited.has(usage.api_key_id)) return;
    const tokens = usage.input_tokens + usage.output_tokens;
    if (tokens <= 0) return;
    if (this.store.hitLocal) this.store.hitLocal(tokenKey(usage.api_key_id), windowMs, tokens);
    else void this.store.hit(tokenKey(usage.api_key_id), windowMs, tokens).catch(() => undefined); // a lost count only loosens the limit
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
