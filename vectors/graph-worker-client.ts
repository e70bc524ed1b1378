// The embedded index's HNSW graphs live on their own thread
// (vectors/graph-worker.ts): usearch's inserts are CPU-bound native calls
// (a 20,000-row first build takes seconds, each later batch milliseconds) and
// would stall every request of the process if they ran on the event loop.
// This is the gateway thread's side: it starts the thread when a first graph
// is needed (so usearch is not loaded at start: the cold start does not pay
// for it), numbers the graphs,
// and turns each call into a message answered in order per graph.
//
// A thread that dies fails the calls it held and every handle on its graphs
// (their partitions fall back to exact search and rebuild); the next graph
// starts a new thread.
import { Worker } from "node:worker_threads";
import { WorkerCalls, type WorkerReply } from "../core/worker-calls.ts";
import type { GraphMatches, GraphSettings } from "./partition-graph.ts";

// Sources run as .ts (tests, benches); `npm start` runs the bundle in .dist/,
// where scripts/build-dist.ts emits the worker beside it.
const workerUrl = new URL(import.meta.url.endsWith(".ts") ? "./graph-worker.ts" : "./graph-worker.mjs", import.meta.url);

export type GraphRequest =
  | { op: "create"; graph: number; dimensions: number; settings: Readonly<GraphSettings> }
  | { op: "load"; graph: number; dimensions: number; settings: Readonly<GraphSettings>; path: string; bytes: number; removals: number[] }
  | { op: "update"; graph: number; removals: number[]; keys: BigUint64Array; vectors: Int8Array }
  | { op: "search"; graph: number; query: Int8Array; count: number }
  | { op: "save"; graph: number; path: string }
  | { op: "drop"; graph: number };
export type GraphCall = GraphRequest & { id: number };
export type { WorkerReply as GraphReply } from "../core/worker-calls.ts";

export class GraphWorker {
  private worker: Worker | undefined;
  /** Bumped whenever a thread is started: handles on an earlier thread's graphs are dead. */
  private generation = 0;
  private readonly calls = new WorkerCalls();
  private nextGraph = 1;

  /** A new empty graph on the thread (queued: usable at once). */
  create(dimensions: number, settings: Readonly<GraphSettings>): RemoteGraph {
    const graph = this.graphHandle();
    void this.call({ op: "create", graph: graph.id, dimensions, settings }).catch(() => graph.fail());
    return graph;
  }

  /** Loads a saved graph file (checked first) and removes `removals` from it. */
  async load(dimensions: number, settings: Readonly<GraphSettings>, path: string, bytes: number, removals: number[]): Promise<RemoteGraph> {
    const graph = this.graphHandle();
    await this.call({ op: "load", graph: graph.id, dimensions, settings, path, bytes, removals });
    return graph;
  }

  /** Ends the thread and every graph on it (a later graph starts a new thread). */
  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    this.generation++;
    if (worker) await worker.terminate();
    this.calls.failAll(new Error("the vector graph thread is closed"));
  }

  /** @internal RemoteGraph's calls. */
  call(request: GraphRequest, generation = this.generation, transfer: ArrayBuffer[] = []): Promise<unknown> {
    if (generation !== this.generation) return Promise.reject(new Error("the vector graph thread that held this graph has exited"));
    return this.calls.send(this.started(), request, transfer);
  }

  private graphHandle(): RemoteGraph {
    this.started();
    return new RemoteGraph(this, this.nextGraph++, this.generation);
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(workerUrl);
    this.generation++;
    // Referenced only while a call waits: idle graphs never keep the process alive.
    worker.unref();
    worker.on("message", (reply: WorkerReply) => this.calls.answer(this.worker, reply));
    const gone = (error: Error): void => {
      if (this.worker === worker) this.worker = undefined;
      this.calls.failAll(error);
    };
    worker.on("error", gone);
    worker.on("exit", (code) => gone(new Error(`the vector graph thread exited (code ${code})`)));
    this.worker = worker;
    return worker;
  }
}

/** One partition's graph on the graph thread. Updates and saves run in call order; searches are answered between insert chunks. */
export class RemoteGraph {
  /** Set when a call failed: the graph is no longer trusted (the partition drops it). */
  failed = false;

  readonly id: number;
  private readonly owner: GraphWorker;
  private readonly generation: number;

  constructor(owner: GraphWorker, id: number, generation: number) {
    this.owner = owner;
    this.id = id;
    this.generation = generation;
  }

  /** Removes `removals`, then inserts rows of int8 vectors under `keys`; resolves with the thread's milliseconds spent. */
  async update(removals: number[], keys: BigUint64Array, vectors: Int8Array): Promise<number> {
    return (await this.guard({ op: "update", graph: this.id, removals, keys, vectors }, [keys.buffer as ArrayBuffer, vectors.buffer as ArrayBuffer])) as number;
  }

  /** Up to `count` labels nearest to `query` (int8), nearest first, with their int8 distances. */
  async search(query: Int8Array, count: number): Promise<GraphMatches> {
    return (await this.guard({ op: "search", graph: this.id, query, count })) as GraphMatches;
  }

  /** Writes the graph to `path`, after every update called before. */
  async save(path: string): Promise<void> {
    await this.guard({ op: "save", graph: this.id, path });
  }

  drop(): void {
    void this.owner.call({ op: "drop", graph: this.id }, this.generation).catch(() => undefined);
  }

  /** @internal */
  fail(): void {
    this.failed = true;
  }

  private async guard(request: GraphRequest, transfer: ArrayBuffer[] = []): Promise<unknown> {
    try {
      return await this.owner.call(request, this.generation, transfer);
    } catch (error) {
      this.failed = true;
      throw error;
    }
  }
}
