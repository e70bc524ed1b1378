// A DataStore in a Map, for unit tests of what keeps documents or talks on
// the broadcast channel: documents by key (put and delete ops), in-process
// channels, and a trail of every read, batch and publish in call order so a
// test can say exactly which keys were read and which batches written. The
// other ops (claims, indexes, counters, backoff) are not needed by those
// modules and throw, so a test that reaches one fails loudly.
import type { BackoffAdmission, DataStore, IndexPage, StoreOp } from "../../core/data-store.ts";

export type StoreCall =
  | { call: "get"; key: string }
  | { call: "getMany"; keys: string[] }
  | { call: "apply"; ops: StoreOp[] }
  | { call: "publish"; channel: string; message: string }
  | { call: "subscribe"; channel: string }
  | { call: "unsubscribe"; channel: string };

export class MemoryDataStore implements DataStore {
  readonly kind = "embedded";
  readonly docs = new Map<string, unknown>();
  readonly calls: StoreCall[] = [];
  /** Set: the next apply rejects with this error and writes nothing. */
  failNextApply: Error | undefined;
  private readonly channels = new Map<string, Set<(message: string) => void>>();

  async get(key: string): Promise<unknown> {
    this.calls.push({ call: "get", key });
    return structuredClone(this.docs.get(key));
  }

  async getMany(keys: string[]): Promise<unknown[]> {
    this.calls.push({ call: "getMany", keys: [...keys] });
    return keys.map((key) => structuredClone(this.docs.get(key)));
  }

  async apply(ops: StoreOp[]): Promise<void> {
    this.calls.push({ call: "apply", ops: structuredClone(ops) });
    const failure = this.failNextApply;
    this.failNextApply = undefined;
    if (failure) throw failure;
    for (const op of ops) {
      if (op.op === "put") this.docs.set(op.key, structuredClone(op.value));
      else if (op.op === "delete") this.docs.delete(op.key);
      else throw new Error(`MemoryDataStore: op ${op.op} not supported`);
    }
  }

  async publish(channel: string, message: string): Promise<void> {
    this.calls.push({ call: "publish", channel, message });
    for (const handler of [...(this.channels.get(channel) ?? [])]) handler(message);
  }

  async subscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    this.calls.push({ call: "subscribe", channel });
    let handlers = this.channels.get(channel);
    if (!handlers) this.channels.set(channel, (handlers = new Set()));
    handlers.add(onMessage);
  }

  async unsubscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    this.calls.push({ call: "unsubscribe", channel });
    this.channels.get(channel)?.delete(onMessage);
  }

  /** The calls made since the last take, then forgets them. */
  take(): StoreCall[] {
    return this.calls.splice(0);
  }

  async lookup(): Promise<string | undefined> {
    throw new Error("MemoryDataStore: lookup not supported");
  }

  async page(): Promise<IndexPage> {
    throw new Error("MemoryDataStore: page not supported");
  }

  async hit(): Promise<{ count: number; resetInMs: number }> {
    throw new Error("MemoryDataStore: hit not supported");
  }

  async backoffAttempt(): Promise<BackoffAdmission> {
    throw new Error("MemoryDataStore: backoffAttempt not supported");
  }

  async backoffRefund(): Promise<void> {
    throw new Error("MemoryDataStore: backoffRefund not supported");
  }

  async backoffClear(): Promise<void> {
    throw new Error("MemoryDataStore: backoffClear not supported");
  }

  async close(): Promise<void> {
    this.channels.clear();
  }
}
