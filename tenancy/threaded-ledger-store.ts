// The embedded ledger on its own thread: the LedgerStore the single-process
// mode uses. Every call is a message to tenancy/ledger-worker.ts, which owns
// the lmdb ledger (EmbeddedLedgerStore: the rules, the atomic appends) and
// answers in arrival order. The gateway thread pays only the structured
// clone of a call's arguments: bench:chat measured an embedded usage flush
// at ~45 µs of event loop per record when the appends ran here, which put
// milliseconds on the p99 of every chat call at 1,000 req/s.
//
// A worker that dies (a bug, never expected) fails the calls it held; the
// next call starts a new one on the same files. The usage recorder retries a
// failed flush and the ledger is idempotent on usage_key, so nothing is
// billed twice; reservations of calls in flight are lost with it (they
// expire anyway).
//
// The thread runs at a lower priority than the gateway's (core/thread-priority.ts):
// its appends come in bursts (a flush of hundreds of records), and on a
// machine whose cores are all busy a burst would otherwise hold the core the
// gateway's event loop was waiting for. At nice 10 the kernel runs the event
// loop first. Measured at 5,000 req/s with Troupe pinned to one core of two
// (docs/benchmarks.md, 2026-11-28): the event loop's wait for a CPU fell
// from a median of 360 to 296 ms per 4-second round, p90 from 9.6 to 5.7 ms
// (eight pairs of rounds). Nothing is lost by it: a record waits in the
// usage journal until its append commits. What waits on the thread: lease
// renewals (begun in the background before they are due) and the calls near
// a hard limit that reserve one by one, which wait behind a usage flush
// already.
import { Worker } from "node:worker_threads";
import { WorkerCalls } from "../core/worker-calls.ts";
import type { LedgerCall, LedgerMethod, LedgerMethods, LedgerReply } from "./ledger-rpc.ts";
import type { BudgetAlert, LedgerStore, Reservation, ReservedPart, ReserveOutcome, StoredBudget, UsageRow, UsageToDate } from "./ledger.ts";
import type { UsageRecord } from "../providers/usage.ts";
import { defaultRetentionMs } from "./ledger-entry.ts";

// Sources run as .ts (tests, the cluster launcher); `npm start` runs the
// bundle in .dist/, where scripts/build-dist.ts emits the worker beside it.
const workerUrl = new URL(import.meta.url.endsWith(".ts") ? "./ledger-worker.ts" : "./ledger-worker.mjs", import.meta.url);

export class ThreadedLedgerStore implements LedgerStore {
  readonly kind = "embedded" as const;
  private readonly dataDir: string;
  private readonly retentionMs: number;
  private worker: Worker | undefined;
  private readonly calls = new WorkerCalls();
  private closed = false;

  /** `retentionMs`: how long per-call entries are kept (EmbeddedLedgerStore). */
  constructor(dataDir: string, retentionMs = defaultRetentionMs) {
    this.dataDir = dataDir;
    this.retentionMs = retentionMs;
    this.worker = this.spawn();
  }

  private spawn(): Worker {
    const worker = new Worker(workerUrl, { workerData: { dataDir: this.dataDir, retentionMs: this.retentionMs } });
    // Referenced only while a call waits: an idle ledger never keeps the process alive.
    worker.unref();
    worker.on("message", (reply: LedgerReply) => this.calls.answer(this.worker, reply));
    const gone = (error: Error) => {
      if (this.worker === worker) this.worker = undefined;
      this.calls.failAll(error);
    };
    worker.on("error", gone);
    worker.on("exit", (code) => gone(new Error(`the ledger thread exited (code ${code})`)));
    return worker;
  }

  private call<M extends LedgerMethod>(method: M, ...args: Parameters<LedgerMethods[M]>): Promise<Awaited<ReturnType<LedgerMethods[M]>>> {
    if (this.closed) return Promise.reject(new Error("the ledger is closed"));
    const worker = (this.worker ??= this.spawn());
    const message: Omit<LedgerCall<M>, "id"> = { method, args };
    return this.calls.send(worker, message) as Promise<Awaited<ReturnType<LedgerMethods[M]>>>;
  }

  append(records: UsageRecord[], settle?: Reservation): Promise<BudgetAlert[]> {
    return settle ? this.call("append", records, settle) : this.call("append", records);
  }

  reserve(reservation: Reservation, amountNanos: number, expiresAtMs: number, nowMs: number): Promise<ReserveOutcome> {
    return this.call("reserve", reservation, amountNanos, expiresAtMs, nowMs);
  }

  reserveParts(place: Omit<Reservation, "id">, parts: ReservedPart[], expiresAtMs: number, nowMs: number, restore: boolean): Promise<ReserveOutcome> {
    return this.call("reserveParts", place, parts, expiresAtMs, nowMs, restore);
  }

  release(reservation: Reservation): Promise<void> {
    return this.call("release", reservation);
  }

  putBudget(projectId: string, budget: StoredBudget, apiKeyId?: string): Promise<void> {
    return apiKeyId ? this.call("putBudget", projectId, budget, apiKeyId) : this.call("putBudget", projectId, budget);
  }

  getBudget(projectId: string, apiKeyId?: string): Promise<StoredBudget | undefined> {
    return apiKeyId ? this.call("getBudget", projectId, apiKeyId) : this.call("getBudget", projectId);
  }

  spent(projectId: string, period: string, apiKeyId?: string): Promise<number> {
    return apiKeyId ? this.call("spent", projectId, period, apiKeyId) : this.call("spent", projectId, period);
  }

  usageRows(projectId: string, fromPeriod: string, toPeriod: string): Promise<UsageRow[]> {
    return this.call("usageRows", projectId, fromPeriod, toPeriod);
  }

  records(projectId: string, period: string): Promise<UsageRecord[]> {
    return this.call("records", projectId, period);
  }

  usageToDate(ids: string[]): Promise<Map<string, UsageToDate>> {
    return this.call("usageToDate", ids);
  }

  pendingAlerts(): Promise<BudgetAlert[]> {
    return this.call("pendingAlerts");
  }

  ackAlert(alert: BudgetAlert): Promise<void> {
    return this.call("ackAlert", alert);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    const worker = this.worker;
    try {
      if (worker) await this.call("close");
    } finally {
      this.closed = true;
      this.worker = undefined;
      await worker?.terminate();
    }
  }
}
