// The embedded ledger's own thread (tenancy/threaded-ledger-store.ts starts
// it): it opens the lmdb ledger and answers the gateway thread's calls, one
// message per LedgerStore method call, in the order they arrive. An append's
// reads, sums and encoding (~7 µs a record in batches of 1,024,
// bench/ledger-append.ts) run here, so the gateway's event loop never stalls
// behind a usage flush.
//
// It lowers its own priority first (ThreadedLedgerStore says why).
import { parentPort, workerData } from "node:worker_threads";
import { lowerThisThreadsPriority } from "../core/thread-priority.ts";
import { EmbeddedLedgerStore } from "./embedded-ledger-store.ts";
import { isLedgerMethod, type LedgerCall, type LedgerReply } from "./ledger-rpc.ts";

const port = parentPort;
if (!port) throw new Error("tenancy/ledger-worker.ts runs as a worker thread (threaded-ledger-store.ts starts it)");
lowerThisThreadsPriority();
const { dataDir, retentionMs } = workerData as { dataDir: string; retentionMs: number };
const store = new EmbeddedLedgerStore(dataDir, { retentionMs });
// The sweeper: expired generations go even while no call is appended (appends sweep too).
const sweeper = setInterval(() => store.sweep(), Math.min(60_000, Math.max(1_000, Math.floor(retentionMs / 8))));
sweeper.unref();

port.on("message", (call: LedgerCall) => {
  void answer(call).then((reply) => port.postMessage(reply));
});

async function answer({ id, method, args }: LedgerCall): Promise<LedgerReply> {
  try {
    if (!isLedgerMethod(method)) throw new Error(`unknown ledger method ${String(method)}`);
    const run = store[method] as (...args: unknown[]) => Promise<unknown>;
    return { id, ok: true, value: await run.apply(store, args) };
  } catch (error) {
    return { id, ok: false, error: error instanceof Error ? error : new Error(String(error)) };
  }
}
