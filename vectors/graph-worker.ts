// The embedded index's HNSW graph thread (vectors/graph-worker-client.ts
// starts it): it owns every partition's usearch graph. Updates and saves of a
// graph run in the order they were sent; an update's inserts go in chunks of
// about `chunkTargetMs`, and the thread turns its event loop between chunks,
// so a search waits at most one chunk even while a 20,000-row graph is built.
import { availableParallelism } from "node:os";
import { setImmediate as nextTurn } from "node:timers/promises";
import { parentPort } from "node:worker_threads";
import { lowerThisThreadsPriority } from "../core/thread-priority.ts";
import type { GraphCall, GraphReply } from "./graph-worker-client.ts";
import { PartitionGraph } from "./partition-graph.ts";

const port = parentPort;
if (!port) throw new Error("vectors/graph-worker.ts runs as a worker thread (graph-worker-client.ts starts it)");
// Below the gateway's event loop; the insert threads usearch starts from this one inherit it.
lowerThisThreadsPriority();
const usearch = (await import("usearch")).default;

/** 4 ms: a search queued behind an insert waits about this long at most. */
const chunkTargetMs = 4;
const graphs = new Map<number, PartitionGraph>();
/** Per graph, the tail of its queued updates and saves. */
const queues = new Map<number, Promise<void>>();
/** Every core but one: the gateway's event loop keeps a core while a graph is built. */
const insertThreads = Math.max(1, availableParallelism() - 1);
/** Rows per insert chunk, adapted to chunkTargetMs (depends on dimensions and graph size). */
let chunkRows = 16;

port.on("message", (call: GraphCall) => {
  if (call.op === "search" || call.op === "create" || call.op === "load") {
    reply(call.id, () => answerAtOnce(call));
    return;
  }
  const previous = queues.get(call.graph) ?? Promise.resolve();
  const next = previous.then(async () => {
    try {
      port.postMessage({ id: call.id, ok: true, value: await answerInOrder(call) } satisfies GraphReply);
    } catch (error) {
      port.postMessage({ id: call.id, ok: false, error: asError(error) } satisfies GraphReply);
    }
  });
  queues.set(call.graph, next);
});

function reply(id: number, answer: () => unknown): void {
  try {
    const value = answer();
    port?.postMessage({ id, ok: true, value } satisfies GraphReply);
  } catch (error) {
    port?.postMessage({ id, ok: false, error: asError(error) } satisfies GraphReply);
  }
}

function answerAtOnce(call: GraphCall): unknown {
  switch (call.op) {
    case "create":
      graphs.set(call.graph, PartitionGraph.create(usearch, call.dimensions, call.settings));
      return null;
    case "load": {
      const graph = PartitionGraph.load(usearch, call.dimensions, call.settings, call.path, call.bytes);
      for (const label of call.removals) graph.remove(label);
      graphs.set(call.graph, graph);
      return null;
    }
    case "search":
      return graphOf(call.graph).search(call.query, call.count);
    default:
      throw new Error(`${call.op} is not answered at once`);
  }
}

async function answerInOrder(call: GraphCall): Promise<unknown> {
  switch (call.op) {
    case "update":
      return await update(graphOf(call.graph), call.removals, call.keys, call.vectors);
    case "save":
      graphOf(call.graph).save(call.path);
      return null;
    case "drop":
      graphs.delete(call.graph);
      queues.delete(call.graph);
      return null;
    default:
      throw new Error(`${call.op} is not queued`);
  }
}

/** Removes, then inserts in chunks; resolves with the milliseconds spent inserting (turns excluded). */
async function update(graph: PartitionGraph, removals: number[], keys: BigUint64Array, vectors: Int8Array): Promise<number> {
  let spentMs = 0;
  for (const label of removals) graph.remove(label);
  const dimensions = keys.length === 0 ? 0 : vectors.length / keys.length;
  for (let from = 0; from < keys.length; ) {
    const to = Math.min(keys.length, from + chunkRows);
    const startedMs = performance.now();
    // Copies: usearch reads a typed array from its buffer's start.
    graph.add(keys.slice(from, to), vectors.slice(from * dimensions, to * dimensions), insertThreads);
    const tookMs = performance.now() - startedMs;
    spentMs += tookMs;
    // At most doubled per chunk: the cost per row grows with the graph.
    chunkRows = Math.max(1, Math.min(2 * (to - from), 4096, Math.round(((to - from) * chunkTargetMs) / Math.max(tookMs, 0.05))));
    from = to;
    if (from < keys.length) await nextTurn();
  }
  return spentMs;
}

function graphOf(id: number): PartitionGraph {
  const graph = graphs.get(id);
  if (!graph) throw new Error(`vector graph ${id} is not on this thread`);
  return graph;
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

