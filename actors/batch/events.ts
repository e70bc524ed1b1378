// Live batch progress (status and request_counts changes), published on the
// tenancy store's broadcast channel like the job events (actors/event-bus.ts):
// in process when embedded, Redis pub/sub in the cluster, so a socket on any
// replica sees the runner of any other.
import type { DataStore } from "../../core/data-store.ts";
import { storeResourceEventBus, type ResourceEventBus } from "../event-bus.ts";
import type { OpenAiBatch } from "./types.ts";

export interface BatchProgressEvent {
  type: "batch.progress";
  batch_id: string;
  status: OpenAiBatch["status"];
  request_counts: OpenAiBatch["request_counts"];
  /** The batch object as OpenAI shapes it (GET /openai/v1/batches/{id}). */
  batch: OpenAiBatch;
}

/** One channel per batch. */
export type BatchEventBus = ResourceEventBus<BatchProgressEvent>;

export function storeBatchEventBus(store: DataStore, onError: (error: unknown) => void): BatchEventBus {
  return storeResourceEventBus<BatchProgressEvent>(store, "batch-events", (event) => event.batch_id, onError);
}

/** Lines settled so far: progress only grows while a batch runs, so an event behind a snapshot is older than it. */
export const settledOf = (b: OpenAiBatch): number => b.request_counts.completed + b.request_counts.failed;

/**
 * Progress at most every `everyMs` per batch (a 50,000-line batch would
 * otherwise publish 50,000 times), the latest always sent: a change of
 * status goes out at once, counts in between are folded into the next.
 */
export function throttledProgress(publish: (b: OpenAiBatch) => void, everyMs: number, now: () => number): (b: OpenAiBatch) => void {
  const last = new Map<string, { at: number; status: string; timer: NodeJS.Timeout | undefined; pending: OpenAiBatch | undefined }>();
  return (b) => {
    const seen = last.get(b.id);
    const t = now();
    if (!seen || seen.status !== b.status || t - seen.at >= everyMs) {
      if (seen?.timer) clearTimeout(seen.timer);
      publish(b);
      if (["completed", "failed", "cancelled", "expired"].includes(b.status)) last.delete(b.id);
      else last.set(b.id, { at: t, status: b.status, timer: undefined, pending: undefined });
      return;
    }
    seen.pending = b;
    seen.timer ??= setTimeout(() => {
      seen.timer = undefined;
      const latest = seen.pending;
      seen.pending = undefined;
      if (latest && last.get(b.id) === seen) {
        seen.at = now();
        publish(latest);
      }
    }, everyMs - (t - seen.at)).unref();
  };
}
