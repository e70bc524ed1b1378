// The request log's writer: the gateway hands it each API-key call as it
// ends, the usage meter hands it each usage record, and it writes both,
// joined by request id, in batches off the request's path (a timer flushes
// every `flushMs`; nothing a response waits for). Usage recorded after its
// request ended (a record billed late) still joins its entry while that
// entry waits in the batch; after that it is not added to the log.
//
// Both buffers are bounded: past `maxPending` calls or usages waiting, the
// oldest are dropped and counted (a store that cannot keep up loses log
// lines, never memory or latency).
import { z } from "zod";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/log.ts";
import type { UsageRecord } from "../providers/usage.ts";
import type { EntryContent } from "./request-log-content.ts";
import type { RequestLogEntry } from "./request-log-entry.ts";
import type { RequestLogStore } from "./request-log-store.ts";

/** What the gateway knows of a call when it ends: the entry's own fields, and the model the request named. */
export type CallFacts = Pick<
  RequestLogEntry,
  "request_id" | "created_ms" | "organization_id" | "project_id" | "environment_id" | "api_key_id" | "live" | "method" | "route" | "status" | "error_code" | "latency_ms" | "ttfb_ms" | "websocket"
> & {
  /** The model the request named; the entry's model when no usage was recorded (a failed call). */
  requested_model: string | null;
  /** The call's content when its project logs it; a promise while the project's setting is read (the flush waits for it). */
  content?: EntryContent | Promise<EntryContent | undefined> | undefined;
};

interface UsageSum {
  model: string;
  provider: string;
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens: number;
  cost_nanos: number;
  deployment: string | null;
  cache: string | null;
  byok: boolean | null;
  /** When the first record arrived (clock ms): usage no call claims within a minute is forgotten. */
  noted_ms: number;
}

/** Usage of a request that never reaches the log (a WebSocket turn) is forgotten after this. */
const unclaimedUsageMs = 60_000;

// Attributes other parts of the router may add to a usage record (the
// deployment that answered, the response cache's verdict, BYOK): read when
// present, so the log carries them without a change here.
const usageExtras = z.object({
  deployment: z.string().optional().catch(undefined),
  cache: z.union([z.string(), z.boolean().transform((b) => (b ? "hit" : "miss"))]).optional().catch(undefined),
  byok: z.boolean().optional().catch(undefined),
});

export interface RequestLogWriterOptions {
  flushMs?: number;
  maxPending?: number;
}

export class RequestLogWriter {
  private readonly store: RequestLogStore;
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly flushMs: number;
  private readonly maxPending: number;
  private calls: CallFacts[] = [];
  private readonly usage = new Map<string, UsageSum>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  /** Calls and usages dropped because a buffer was full. */
  dropped = 0;

  constructor(store: RequestLogStore, clock: Clock, log: Logger, options: RequestLogWriterOptions = {}) {
    this.store = store;
    this.clock = clock;
    this.log = log;
    this.flushMs = options.flushMs ?? 500;
    this.maxPending = options.maxPending ?? 50_000;
  }

  /** A usage record: joined to its request's entry (several records of one request add up). */
  noteUsage(u: UsageRecord): void {
    const extras = usageExtras.safeParse(u);
    const x = extras.success ? extras.data : {};
    const sum = this.usage.get(u.request_id);
    if (sum) {
      sum.model = u.model;
      sum.provider = u.provider;
      sum.input_tokens += u.input_tokens;
      sum.output_tokens += u.output_tokens;
      sum.cached_input_tokens += u.cached_input_tokens ?? 0;
      sum.cost_nanos += u.cost_nanos;
      sum.deployment = x.deployment ?? sum.deployment;
      sum.cache = x.cache ?? sum.cache;
      sum.byok = x.byok ?? sum.byok;
      return;
    }
    if (this.usage.size >= this.maxPending) {
      const oldest = this.usage.keys().next().value;
      if (oldest !== undefined) this.usage.delete(oldest);
      this.dropped += 1;
    }
    this.usage.set(u.request_id, {
      model: u.model,
      provider: u.provider,
      input_tokens: u.input_tokens,
      output_tokens: u.output_tokens,
      cached_input_tokens: u.cached_input_tokens ?? 0,
      cost_nanos: u.cost_nanos,
      deployment: x.deployment ?? null,
      cache: x.cache ?? null,
      byok: x.byok ?? null,
      noted_ms: this.clock.now(),
    });
  }

  /** A call that ended: written with the next batch. */
  noteCall(call: CallFacts): void {
    if (this.calls.length >= this.maxPending) {
      this.calls.shift();
      this.dropped += 1;
    }
    this.calls.push(call);
    this.timer ??= setTimeout(() => void this.flush(), this.flushMs).unref();
  }

  /** Writes what is waiting; resolves when it is stored (tests and the stop wait on it). */
  async flush(): Promise<void> {
    this.timer = undefined;
    await this.flushing;
    const calls = this.calls;
    if (calls.length === 0) return;
    this.calls = [];
    const contents = await Promise.all(calls.map((c) => c.content));
    const entries = calls.map((c, i) => this.entryOf(c, contents[i]));
    const stale = this.clock.now() - unclaimedUsageMs;
    for (const [id, u] of this.usage) {
      // Insertion order: the first one still fresh ends the sweep.
      if (u.noted_ms > stale) break;
      this.usage.delete(id);
    }
    this.flushing = this.store.append(entries).catch((error: unknown) => {
      this.dropped += entries.length;
      this.log.warn("request log: a batch was not written", { entries: entries.length, error: String(error) });
    });
    await this.flushing;
    this.flushing = undefined;
  }

  private entryOf(c: CallFacts, content: EntryContent | undefined): RequestLogEntry {
    const u = this.usage.get(c.request_id);
    if (u) this.usage.delete(c.request_id);
    const { requested_model, content: _pending, ...facts } = c;
    return {
      ...facts,
      ...(content ? { content } : {}),
      model: u?.model ?? requested_model,
      provider: u?.provider ?? null,
      deployment: u?.deployment ?? null,
      input_tokens: u?.input_tokens ?? 0,
      output_tokens: u?.output_tokens ?? 0,
      cached_input_tokens: u?.cached_input_tokens ?? 0,
      cost_nanos: u?.cost_nanos ?? 0,
      cache: u?.cache ?? null,
      byok: u?.byok ?? null,
    };
  }

  /** Flushes and stops the timer; the store is closed by its owner. */
  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    await this.flush();
    // Usage whose request never reached the log (not an HTTP call: a WebSocket turn) is forgotten.
    this.usage.clear();
  }
}
