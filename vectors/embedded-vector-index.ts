// The embedded (default) vector index: exact cosine search in process, records
// persisted in an LMDB file under the data directory. `add` resolves only
// after LMDB has flushed the records to disk, so nothing acknowledged is lost
// when the process dies; on open every record is loaded back into per
// organization partitions (isolation by construction: a search only ever
// reads its own organization's partitions). The per-organization quota is
// counted from memory plus the new ids of batches not yet applied.
//
// Partitions from `graph.fromRows` rows (VECTOR_HNSW_FROM_ROWS) are searched
// through a usearch HNSW graph on its own thread (graph-worker.ts; distances
// still exact); `add` does not wait for graph inserts (rows not yet in are
// scored exactly). Graphs are saved under graphs/ (graph-snapshot.ts).
import { mkdir, open as openFile, readFile, rename } from "node:fs/promises";
import { join } from "node:path";
import { setImmediate as nextTurn } from "node:timers/promises";
import { open as openLmdb, type Database, type RootDatabase } from "lmdb";
import { z } from "zod";
import { readVersionField, SCHEMA_VERSION } from "../core/schema-version.ts";
import type { Logger } from "../core/log.ts";
import { loadUsearch, VectorPartition, type ExactSearchKernel, type PartitionHit, type PartitionOptions, type SearchStats } from "./embedded-partition.ts";
import { openPartitionGraphs, saveChangedGraphs, type GraphContext, type GraphOpenStats } from "./embedded-graphs.ts";
import { GraphWorker } from "./graph-worker-client.ts";
import { removeGraphSnapshot } from "./graph-snapshot.ts";
import { storedKeySchema, storedValueSchema, toStored, type StoredValue } from "./embedded-records.ts";
import { defaultGraphSettings, type GraphSettings } from "./partition-graph.ts";
import {
  assertSameIndexMeta,
  assertValidIndexMeta,
  byOrganization,
  checkQuery,
  checkRecords,
  cosineDistance,
  defaultVectorLimits,
  indexMetaSchema,
  quotaExceeded,
  unitVector,
  type CheckedRecord,
  type VectorIndex,
  type VectorIndexMeta,
  type VectorIndexOptions,
  type VectorLimits,
  type VectorRecord,
  type VectorSearchFilter,
  type VectorSearchResult,
} from "./vector-index.ts";

export interface EmbeddedVectorIndexOptions extends VectorIndexOptions {
  /** Directory holding meta.json and records.mdb (created if missing). */
  directory: string;
  /** Exact-search kernel; "usearch" (SIMD) unless a test pins the JS loop. */
  kernel?: ExactSearchKernel;
  /** Partitions from this many rows use int8 candidates + float32 rescoring (default 4096). */
  quantizeFromRows?: number;
  /** HNSW for large partitions (default defaultGraphSettings); fromRows 0 keeps every partition exact. */
  graph?: Partial<GraphSettings>;
}

/** Partition keys: "k:<kind>" for a string metadata.kind, "-" for none (no kind can collide with it). */
const noKind = "-";
const kindKey = (kind: string): string => `k:${kind}`;
/**
 * A batch's records go into memory in slices of about this long, the event
 * loop turning in between: 1,000 768-dimension records take ~35 ms on a busy
 * 2-core machine, which stalled every request for that long.
 */
const applySliceMs = 4;

export class EmbeddedVectorIndex implements VectorIndex {
  readonly backend = "embedded";
  readonly model: string;
  readonly dimensions: number;
  readonly limits: Readonly<VectorLimits>;
  private readonly directory: string;
  private readonly partitionOptions: PartitionOptions;
  private readonly logger: Logger | undefined;
  private readonly graphDirectory: string;
  /** The graph thread (started by the first graph; absent when every search is exact) and its background saves. */
  private readonly graphs: GraphWorker | undefined;
  private readonly graphWork = new Map<Promise<void>, string>();
  graphOpenStats: GraphOpenStats = { loaded: 0, built: 0, caughtUp: 0, ms: 0 };
  private db: RootDatabase<StoredValue, [string, string]> | undefined;
  /** organization → kind → partition. */
  private readonly organizations = new Map<string, Map<string, VectorPartition>>();
  /** organization → id → kind, to move a record whose kind changed. */
  private readonly kindById = new Map<string, Map<string, string>>();
  /**
   * organization → ids of new records in batches not yet applied to memory.
   * They count against the quota from the moment they pass the check, so
   * concurrent adds cannot together overshoot it.
   */
  private readonly reserved = new Map<string, Set<string>>();
  /** Applies committed batches to memory in the order they were written. */
  private applyTail: Promise<void> = Promise.resolve();

  constructor(options: EmbeddedVectorIndexOptions) {
    this.directory = options.directory;
    this.model = options.model;
    this.dimensions = options.dimensions;
    this.limits = options.limits ?? defaultVectorLimits;
    const graph = { ...defaultGraphSettings, ...options.graph };
    this.graphs = graph.fromRows > 0 ? new GraphWorker() : undefined;
    this.partitionOptions = {
      kernel: options.kernel ?? "usearch",
      ...(options.quantizeFromRows === undefined ? {} : { quantizeFromRows: options.quantizeFromRows }),
      ...(this.graphs ? { graph, graphs: this.graphs } : {}),
    };
    this.graphDirectory = join(this.directory, "graphs");
    this.logger = options.logger;
    assertValidIndexMeta({ model: this.model, dimensions: this.dimensions });
  }

  async open(): Promise<void> {
    if (this.db) return;
    await mkdir(this.directory, { recursive: true });
    const configured: VectorIndexMeta = { model: this.model, dimensions: this.dimensions };
    const stored = await this.readMeta();
    if (stored) assertSameIndexMeta(this.directory, stored, configured);
    else await this.writeMeta(configured);

    const db = openLmdb<StoredValue, [string, string]>({
      path: join(this.directory, "records.mdb"),
      encoding: "msgpack",
      compression: false,
    });
    const startedMs = performance.now();
    let loaded = 0;
    try {
      for (const { key, value } of db.getRange()) {
        const [organizationId, id] = storedKeySchema.parse(key);
        const record = storedValueSchema.parse(readVersionField("vector-record", value, "s"));
        const vector = new Float32Array(record.vector.buffer.slice(record.vector.byteOffset, record.vector.byteOffset + record.vector.byteLength));
        const unit = unitVector(vector, this.dimensions);
        if (typeof unit === "string") throw new Error(`record ${organizationId}/${id}: ${unit}`);
        const metadata = z.record(z.string(), z.unknown()).parse(JSON.parse(record.metadata));
        this.applyOne(organizationId, id, record, metadata, unit);
        loaded++;
      }
    } catch (error) {
      await db.close();
      throw new Error(`vector index ${this.directory} holds an unreadable record: ${(error as Error).message}`, { cause: error });
    }
    this.db = db;
    this.graphOpenStats = await openPartitionGraphs(this.organizations, this.graphContext(), (organizationId, work) => this.inBackground(organizationId, work));
    this.logger?.info("vector index loaded", {
      backend: "embedded",
      directory: this.directory,
      records: loaded,
      ms: Math.round(performance.now() - startedMs),
      graphs: this.graphOpenStats,
    });
  }

  async add(records: readonly VectorRecord[]): Promise<void> {
    const db = this.requireOpen();
    const checked = checkRecords(records, this, this.limits);
    if (checked.length === 0) return;
    // Checked and reserved in one synchronous step (no await in between), so
    // the quota holds exactly however many adds run at once.
    const reservation = this.reserve(checked);
    try {
      // Writes are queued in call order; memory follows the same order once each
      // batch is on disk, so concurrent upserts of one id end as they were called.
      const written = db.transaction(() => {
        for (const record of checked) void db.put([record.organization_id, record.id], toStored(record));
      });
      const previous = this.applyTail;
      const applied = (async () => {
        await previous.catch(() => undefined);
        await written;
        await db.flushed;
        const touched = new Set<VectorPartition>();
        let sliceStartedMs = performance.now();
        for (const record of checked) {
          if (performance.now() - sliceStartedMs > applySliceMs) {
            // Searches meanwhile see the batch partly applied, as they see a later batch not yet applied.
            await nextTurn();
            sliceStartedMs = performance.now();
          }
          touched.add(this.applyOne(record.organization_id, record.id, toStored(record), record.metadata, record.unit));
          // Counted by kindById from here on: released in the same step, so a quota check between slices counts it once.
          this.releaseOne(reservation, record.organization_id, record.id);
        }
        // Sent to the graph thread; the inserts do not hold up this add.
        for (const partition of touched) partition.syncGraph();
      })();
      this.applyTail = applied;
      await applied;
    } finally {
      this.release(reservation);
    }
  }

  async search(
    organizationId: string,
    queryVector: readonly number[] | Float32Array,
    topK: number,
    filter?: VectorSearchFilter,
  ): Promise<VectorSearchResult[]> {
    this.requireOpen();
    const query = checkQuery(organizationId, queryVector, topK, filter, this);
    if (this.partitionOptions.kernel === "usearch") await loadUsearch();
    const partitions = this.organizations.get(query.organizationId);
    if (!partitions) return [];
    let hits: PartitionHit[] = [];
    if (query.metadataKind !== undefined) {
      hits = (await partitions.get(kindKey(query.metadataKind))?.search(query.unit, query.topK)) ?? [];
    } else {
      for (const partition of [...partitions.values()]) hits.push(...(await partition.search(query.unit, query.topK)));
      hits.sort((a, b) => b.cosine - a.cosine);
      hits.length = Math.min(hits.length, query.topK);
    }
    return hits.map(({ entry, cosine }) => ({
      id: entry.id,
      content: entry.content,
      metadata: JSON.parse(entry.metadataJson) as Record<string, unknown>,
      model: entry.model,
      distance: cosineDistance(cosine),
    }));
  }

  async deleteOrganization(organizationId: string): Promise<number> {
    const db = this.requireOpen();
    // After the batches already written are in memory, so none re-adds a deleted record.
    await this.applyTail.catch(() => undefined);
    // Keys sort by organization first: its records are one contiguous range.
    const keys: [string, string][] = [];
    for (const key of db.getKeys({ start: [organizationId, ""] })) {
      if (key[0] !== organizationId) break;
      keys.push(key);
    }
    await db.transaction(() => {
      for (const key of keys) void db.remove(key);
    });
    await db.flushed;
    for (const partition of this.organizations.get(organizationId)?.values() ?? []) partition.dropGraph();
    // A background save of a dropped graph finds nothing to save, or ends before its files are removed.
    await Promise.allSettled([...this.graphWork].filter(([, owner]) => owner === organizationId).map(([work]) => work));
    for (const kind of this.organizations.get(organizationId)?.keys() ?? []) removeGraphSnapshot(this.graphDirectory, organizationId, kind);
    this.organizations.delete(organizationId);
    this.kindById.delete(organizationId);
    return keys.length;
  }

  async close(): Promise<void> {
    const db = this.db;
    if (!db) return;
    await this.applyTail.catch(() => undefined);
    this.db = undefined;
    // What is still unsent is left out of the saved maps and caught up at the next open.
    await saveChangedGraphs(this.organizations, this.graphContext());
    await this.graphs?.close();
    await Promise.allSettled(this.graphWork.keys());
    this.organizations.clear();
    this.kindById.clear();
    await db.close();
  }

  /** Resolves once every partition's graph holds all its rows and background saves are done (tests, benches). */
  async graphsSettled(): Promise<void> {
    const partitions = [...this.organizations.values()].flatMap((kinds) => [...kinds.values()]);
    await Promise.all(partitions.map((partition) => partition.graphSettled()));
    await Promise.allSettled(this.graphWork.keys());
  }

  private inBackground(organizationId: string, work: Promise<void>): void {
    const tracked: Promise<void> = work.finally(() => this.graphWork.delete(tracked));
    this.graphWork.set(tracked, organizationId);
  }

  /** Records held for an organization (for diagnostics and tests). */
  count(organizationId: string): number {
    let total = 0;
    for (const partition of this.organizations.get(organizationId)?.values() ?? []) total += partition.size;
    return total;
  }

  async checkQuota(organizationId: string, adding: number): Promise<void> {
    this.requireOpen();
    const held = (this.kindById.get(organizationId)?.size ?? 0) + (this.reserved.get(organizationId)?.size ?? 0);
    if (held + adding > this.limits.quotaPerOrganization) throw quotaExceeded(held, adding, this.limits);
  }

  /** Reserves the batch's new ids per organization, or throws quota_exceeded having reserved nothing. */
  private reserve(checked: readonly CheckedRecord[]): Map<string, Set<string>> {
    const reservation = new Map<string, Set<string>>();
    for (const [organizationId, group] of byOrganization(checked)) {
      const stored = this.kindById.get(organizationId);
      const pending = this.reserved.get(organizationId);
      const fresh = new Set<string>();
      for (const record of group) if (!stored?.has(record.id) && !pending?.has(record.id)) fresh.add(record.id);
      const held = (stored?.size ?? 0) + (pending?.size ?? 0);
      if (held + fresh.size > this.limits.quotaPerOrganization) throw quotaExceeded(held, fresh.size, this.limits);
      reservation.set(organizationId, fresh);
    }
    for (const [organizationId, fresh] of reservation) {
      let pending = this.reserved.get(organizationId);
      if (!pending) this.reserved.set(organizationId, (pending = new Set()));
      for (const id of fresh) pending.add(id);
    }
    return reservation;
  }

  /** One record of the reservation is now counted by kindById: it leaves the reservation (a no-op if it already left). */
  private releaseOne(reservation: Map<string, Set<string>>, organizationId: string, id: string): void {
    if (!reservation.get(organizationId)?.delete(id)) return;
    const pending = this.reserved.get(organizationId);
    pending?.delete(id);
    if (pending?.size === 0) this.reserved.delete(organizationId);
  }

  /** What is left of the reservation when add returns: nothing once every record was applied, all of it if the write failed. */
  private release(reservation: Map<string, Set<string>>): void {
    for (const [organizationId, fresh] of reservation) for (const id of [...fresh]) this.releaseOne(reservation, organizationId, id);
    reservation.clear();
  }

  /** How many searches used the int8 step, and how many of those fell back to float32. */
  searchStats(): SearchStats {
    const total: SearchStats = { quantized: 0, fallbacks: 0, approximate: 0, graphCandidates: 0, graphRescored: 0, graphInsertMs: 0 };
    for (const partitions of this.organizations.values()) {
      for (const partition of partitions.values()) {
        total.quantized += partition.stats.quantized;
        total.fallbacks += partition.stats.fallbacks;
        total.approximate += partition.stats.approximate;
        total.graphCandidates += partition.stats.graphCandidates;
        total.graphRescored += partition.stats.graphRescored;
        total.graphInsertMs += partition.graphInsertMs;
      }
    }
    return total;
  }

  private applyOne(organizationId: string, id: string, value: StoredValue, metadata: Record<string, unknown>, unit: Float32Array): VectorPartition {
    const kindValue = metadata["kind"];
    const kind = typeof kindValue === "string" ? kindKey(kindValue) : noKind;
    let partitions = this.organizations.get(organizationId);
    let kinds = this.kindById.get(organizationId);
    if (!partitions || !kinds) {
      partitions = new Map();
      kinds = new Map();
      this.organizations.set(organizationId, partitions);
      this.kindById.set(organizationId, kinds);
    }
    const previousKind = kinds.get(id);
    if (previousKind !== undefined && previousKind !== kind) partitions.get(previousKind)?.remove(id);
    let partition = partitions.get(kind);
    if (!partition) {
      partition = new VectorPartition(this.dimensions, this.partitionOptions);
      partitions.set(kind, partition);
    }
    partition.upsert({ id, content: value.content, metadataJson: value.metadata, model: value.model }, unit);
    kinds.set(id, kind);
    return partition;
  }

  private graphContext(): GraphContext {
    return {
      directory: this.graphDirectory,
      dimensions: this.dimensions,
      ...(this.partitionOptions.graph ? { settings: this.partitionOptions.graph } : {}),
      ...(this.graphs ? { graphs: this.graphs } : {}),
      ...(this.logger ? { logger: this.logger } : {}),
    };
  }

  private requireOpen(): Database<StoredValue, [string, string]> {
    if (!this.db) throw new Error("vector index is not open: call open() first");
    return this.db;
  }

  storedMeta(): Promise<VectorIndexMeta | undefined> {
    return this.readMeta();
  }

  private async readMeta(): Promise<VectorIndexMeta | undefined> {
    let text: string;
    try {
      text = await readFile(join(this.directory, "meta.json"), "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
    const parsed = indexMetaSchema.safeParse(readVersionField("vector-metadata", JSON.parse(text)));
    if (!parsed.success) throw new Error(`vector index ${this.directory}/meta.json is unreadable: ${z.prettifyError(parsed.error)}`);
    return parsed.data;
  }

  /** Written once, atomically (temp file, fsync, rename), before any record. */
  private async writeMeta(meta: VectorIndexMeta): Promise<void> {
    const target = join(this.directory, "meta.json");
    const temp = `${target}.${process.pid}.tmp`;
    const file = await openFile(temp, "w");
    try {
      await file.writeFile(JSON.stringify({ schema_version: SCHEMA_VERSION, ...meta, similarity: "cosine", created_by: "troupe" }, null, 2) + "\n");
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(temp, target);
  }
}
