// The production UsageSink: every AI call's usage record is buffered in
// memory and written to the tenancy store in small batches off the request
// path (never delaying a response), indexed per project for the billing
// work to read back. A failed flush is retried with the next batch.
import type { Logger } from "../core/log.ts";
import { prefixedId } from "../core/ids.ts";
import type { UsageRecord, UsageSink } from "../providers/usage.ts";
import type { StoreOp, TenancyStore } from "./store.ts";

const flushEveryMs = 200;
const maxBuffered = 100_000; // beyond this, oldest records are dropped and counted

export class UsageRecorder implements UsageSink {
  private readonly store: TenancyStore;
  private readonly log: Logger;
  private buffer: UsageRecord[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  dropped = 0;

  constructor(store: TenancyStore, log: Logger) {
    this.store = store;
    this.log = log;
  }

  record(usage: UsageRecord): void {
    if (this.buffer.length >= maxBuffered) {
      this.buffer.shift();
      this.dropped += 1;
    }
    this.buffer.push(usage);
    this.timer ??= setTimeout(() => void this.flush(), flushEveryMs);
  }

  async flush(): Promise<void> {
    this.timer = undefined;
    await this.flushing;
    const batch = this.buffer;
    if (batch.length === 0) return;
    this.buffer = [];
    const ops: StoreOp[] = [];
    for (const usage of batch) {
      const id = prefixedId("usg");
      ops.push({ op: "put", key: `usage:${id}`, value: usage });
      ops.push({ op: "index", key: `project-usage:${usage.project_id}`, member: id, score: Date.parse(usage.created_at) });
    }
    this.flushing = this.store.apply(ops).catch((error: unknown) => {
      this.log.warn("usage flush failed; will retry", { records: batch.length, error });
      this.buffer = batch.concat(this.buffer);
      this.timer ??= setTimeout(() => void this.flush(), flushEveryMs * 5);
    });
    await this.flushing;
  }

  /** Flushes what is buffered; called on shutdown. */
  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    await this.flush();
  }
}
