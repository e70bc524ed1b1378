// Calls to a worker thread, answered by id: the bookkeeping both of the
// gateway's worker threads share (the ledger's, tenancy/threaded-ledger-store.ts,
// and the vector graphs', vectors/graph-worker-client.ts). The worker is
// referenced only while a call waits, so an idle thread never keeps the
// process alive; a thread that dies fails every call it held.
import type { Worker } from "node:worker_threads";

export type WorkerReply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: Error };

interface Waiting {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

export class WorkerCalls {
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 1;

  /** Posts `message` with the call's id added; resolves with the worker's answer. */
  send(worker: Worker, message: object, transfer: ArrayBuffer[] = []): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (this.waiting.size === 0) worker.ref();
      this.waiting.set(id, { resolve, reject });
      worker.postMessage({ ...message, id }, transfer);
    });
  }

  /** The worker's answer to one call (`worker`: to unreference once none waits). */
  answer(worker: Worker | undefined, reply: WorkerReply): void {
    const waiting = this.waiting.get(reply.id);
    if (!waiting) return;
    this.waiting.delete(reply.id);
    if (this.waiting.size === 0) worker?.unref();
    if (reply.ok) waiting.resolve(reply.value);
    else waiting.reject(reply.error);
  }

  /** The thread is gone: every call it held fails with `error`. */
  failAll(error: Error): void {
    const waiting = [...this.waiting.values()];
    this.waiting.clear();
    for (const call of waiting) call.reject(error);
  }
}
