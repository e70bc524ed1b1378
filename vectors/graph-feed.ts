// What a partition has sent to its HNSW graph on the graph thread, and what
// it has not yet. Rows stored since the graph last caught up wait in
// `unsent`; they go to the thread in jobs of `jobRows`, at most two jobs in
// flight, so the gateway thread never copies more than a few MB at once (a
// 1,000,000-row rebuild is a queue, not one 768 MB copy). A row counts as in
// the graph only once its job is confirmed: until then searches score it
// exactly (embedded-partition.ts), so answers never miss a row the graph
// does not hold yet.
import type { RemoteGraph } from "./graph-worker-client.ts";

/** 4,096 rows: ~3 MB of int8 copied per job at 768 dimensions (about a millisecond). */
const jobRows = 4096;
const jobsInFlight = 2;

export interface FeedRows {
  readonly dimensions: number;
  /** The row holding this label now, or undefined when the label left the partition. */
  rowOf(label: number): number | undefined;
  /** Copies the row's int8 vector into `out` at `offset`. */
  copyInt8(row: number, out: Int8Array, offset: number): void;
}

export class GraphFeed {
  remote: RemoteGraph | undefined;
  /** Whether the graph changed since it was last saved or loaded. */
  changed = false;
  /** Thread milliseconds spent inserting (the build, then each job). */
  insertMs = 0;
  /** Graphs that failed (a dead thread, a usearch error): after three the partition stays exact. */
  failures = 0;
  private unsent: number[] = [];
  private removals: number[] = [];
  private readonly inFlight = new Map<number, number[]>();
  private nextJob = 0;
  private waiters: Array<() => void> = [];

  private readonly rows: FeedRows;

  constructor(rows: FeedRows) {
    this.rows = rows;
  }

  /** Starts feeding a graph: `labels` are to be inserted, `removals` to be removed from it. */
  start(remote: RemoteGraph, labels: number[], removals: number[] = []): void {
    this.remote = remote;
    this.unsent = labels;
    this.removals = removals;
    this.changed = labels.length > 0 || removals.length > 0;
    this.pump();
  }

  /** A label stored in the partition (queued when there is a graph). */
  added(label: number): void {
    if (this.remote) this.unsent.push(label);
  }

  /** A label that left the partition: its node is removed with the next job. */
  forgotten(label: number): void {
    if (this.remote) this.removals.push(label);
  }

  get hasUnsent(): boolean {
    return this.unsent.length > 0 || this.removals.length > 0;
  }

  /** Rows stored but not yet confirmed in the graph. */
  get pendingRows(): number {
    let rows = this.unsent.length;
    for (const labels of this.inFlight.values()) rows += labels.length;
    return rows;
  }

  /** The labels of `pendingRows` (a copy). */
  pendingLabels(): number[] {
    const labels = this.unsent.slice();
    for (const job of this.inFlight.values()) labels.push(...job);
    return labels;
  }

  /** Labels not yet sent: a snapshot saved now must not claim them. */
  unsentLabels(): ReadonlySet<number> {
    return new Set(this.unsent);
  }

  /** Sends jobs until two are in flight or nothing is left to send. */
  pump(): void {
    const remote = this.remote;
    if (!remote) return;
    const d = this.rows.dimensions;
    while (this.inFlight.size < jobsInFlight && this.hasUnsent) {
      const labels = this.unsent.splice(0, jobRows).filter((label) => this.rows.rowOf(label) !== undefined);
      const removals = this.removals;
      this.removals = [];
      const keys = new BigUint64Array(labels.length);
      const vectors = new Int8Array(labels.length * d);
      labels.forEach((label, i) => {
        keys[i] = BigInt(label);
        this.rows.copyInt8(this.rows.rowOf(label) as number, vectors, i * d);
      });
      const job = this.nextJob++;
      this.inFlight.set(job, labels);
      this.changed = true;
      remote.update(removals, keys, vectors).then(
        (ms) => {
          if (this.remote !== remote) return;
          this.insertMs += ms;
          this.inFlight.delete(job);
          this.pump();
          this.notify();
        },
        () => {
          if (this.remote !== remote) return;
          this.failures++;
          this.drop();
        },
      );
    }
  }

  /** Forgets the graph (on the thread too); the partition searches exactly until it builds another. */
  drop(): void {
    this.remote?.drop();
    this.remote = undefined;
    this.unsent = [];
    this.removals = [];
    this.inFlight.clear();
    this.changed = false;
    this.notify();
  }

  /** Resolves once every stored row is confirmed in the graph (or the graph is dropped). */
  settled(): Promise<void> {
    if (!this.remote || (this.pendingRows === 0 && !this.hasUnsent)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private notify(): void {
    if (this.remote && (this.pendingRows > 0 || this.hasUnsent)) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }
}
