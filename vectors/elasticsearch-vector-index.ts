// The distributed vector index: one Elasticsearch index with a float HNSW
// `dense_vector` (cosine). Organization scoping is a `term` filter INSIDE the
// top-level knn, so the filter applies during the graph search and an
// organization's top_k is its own even when other organizations' vectors are
// closer. The model and dimension the index was built with live in the
// mapping's `_meta`; a mismatch is refused at open. The per-organization
// quota is a `_count` of the organization's documents plus this process's
// adds still in flight (reservation-ledger.ts), checked before the bulk.
import { Client, errors } from "@elastic/elasticsearch";
import { z } from "zod";
import { readVersionField, SCHEMA_VERSION } from "../core/schema-version.ts";
import { TroupeError } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import { ReservationLedger, type Reservation } from "./reservation-ledger.ts";
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
  type CheckedRecord,
  type VectorIndex,
  type VectorIndexOptions,
  type VectorLimits,
  type VectorRecord,
  type VectorSearchFilter,
  type VectorSearchResult,
  type VectorIndexMeta,
} from "./vector-index.ts";

export interface ElasticsearchVectorIndexOptions extends VectorIndexOptions {
  url: string;
  index: string;
  /** Per-request deadline for searches and index management (default 5 s). */
  requestTimeoutMs?: number;
  /** Deadline for one _bulk request, which includes waiting for a refresh (default 60 s). */
  bulkTimeoutMs?: number;
  /** Retries on connection failures (default 1): an outage must surface quickly. */
  maxRetries?: number;
  /** knn candidates per shard for a given k (default max(400, 10·k), at most 10 000; 400 measured recall@10 ≥ 0.99 at 100k × 768). */
  numCandidates?: (k: number) => number;
  /** HNSW graph parameters, used only when this creates the index (default m 16, ef_construction 100). */
  hnsw?: { m: number; efConstruction: number };
  /** Created with index.store.preload for the vectors (vec), graph (vex) and small segments' compound (cfs) files (default true; used only when this creates the index). */
  preloadVectors?: boolean;
}

export interface BulkAddOptions {
  /**
   * "wait_for" (default) resolves once the records are searchable;
   * false leaves them to the next refresh (bulk loads call refresh() at the end).
   * With false the records stay reserved against the quota until refresh(),
   * while Elasticsearch's own periodic refresh already counts them as
   * stored: until then the quota counts them twice (strict, never loose).
   */
  refresh?: "wait_for" | false;
}

const troupeMetaSchema = z.object({ troupe: indexMetaSchema });

const hitSourceSchema = z.object({
  record_id: z.string(),
  content: z.string(),
  metadata: z.record(z.string(), z.unknown()),
  model: z.string(),
});
const countResponseSchema = z.object({ count: z.number().int().min(0) });
const mgetResponseSchema = z.object({ docs: z.array(z.object({ found: z.boolean().optional() })) });
const searchResponseSchema = z.object({
  hits: z.object({
    hits: z.array(z.object({ _score: z.number().nullable(), _source: hitSourceSchema })),
  }),
});

/** knn num_candidates for top k: at least `floor` and 10·k, at most ES's 10,000 (ELASTICSEARCH_NUM_CANDIDATES). */
export function numCandidatesFrom(floor: number): (k: number) => number {
  return (k) => Math.min(10_000, Math.max(floor, 10 * k));
}

/** Defaults when no setting is given; core/config.ts's ELASTICSEARCH_* defaults equal these (a test holds them together). */
export const defaultElasticsearchHnsw = { m: 16, efConstruction: 100 } as const;
export const defaultNumCandidatesFloor = 400;
const defaultNumCandidates = numCandidatesFrom(defaultNumCandidatesFloor);

export class ElasticsearchVectorIndex implements VectorIndex {
  readonly backend = "elasticsearch";
  readonly model: string;
  readonly dimensions: number;
  readonly index: string;
  readonly limits: Readonly<VectorLimits>;
  private readonly url: string;
  private readonly client: Client;
  private readonly requestTimeoutMs: number;
  private readonly bulkTimeoutMs: number;
  /** knn num_candidates a search for top k asks for (ELASTICSEARCH_NUM_CANDIDATES). */
  readonly numCandidates: (k: number) => number;
  private readonly hnsw: { m: number; efConstruction: number };
  private readonly preloadVectors: boolean;
  private readonly logger: Logger | undefined;
  private opened = false;
  private readonly ledger = new ReservationLedger();
  /** Reservations of bulks added with refresh false: counts see them only after refresh(). */
  private awaitingRefresh: Reservation[] = [];

  constructor(options: ElasticsearchVectorIndexOptions) {
    assertValidIndexMeta({ model: options.model, dimensions: options.dimensions });
    this.url = options.url;
    this.index = options.index;
    this.model = options.model;
    this.dimensions = options.dimensions;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 5_000;
    this.bulkTimeoutMs = options.bulkTimeoutMs ?? 60_000;
    this.numCandidates = options.numCandidates ?? defaultNumCandidates;
    this.hnsw = options.hnsw ?? defaultElasticsearchHnsw;
    this.preloadVectors = options.preloadVectors ?? true;
    this.limits = options.limits ?? defaultVectorLimits;
    this.logger = options.logger;
    // The transport's per-request timeout can only shorten the client-wide one
    // (undici's socket timeouts come from it), so the client gets the longest
    // deadline (bulk) and every other call passes the short one.
    this.client = new Client({
      node: options.url,
      requestTimeout: Math.max(this.bulkTimeoutMs, this.requestTimeoutMs),
      maxRetries: options.maxRetries ?? 1,
    });
  }

  async storedMeta(): Promise<VectorIndexMeta | undefined> {
    const exists = await this.call("check the index", () => this.client.indices.exists({ index: this.index }, this.short()));
    if (!exists) return undefined;
    const mapping = await this.call("read the index mapping", () => this.client.indices.getMapping({ index: this.index }, this.short()));
    const meta = troupeMetaSchema.safeParse(Object.values(mapping)[0]?.mappings._meta);
    return meta.success ? meta.data.troupe : undefined;
  }

  async open(): Promise<void> {
    if (this.opened) return;
    const exists = await this.call("check the index", () => this.client.indices.exists({ index: this.index }, this.short()));
    if (!exists) await this.createIndex();
    const mapping = await this.call("read the index mapping", () => this.client.indices.getMapping({ index: this.index }, this.short()));
    const stored = Object.values(mapping)[0]?.mappings._meta;
    // The index's schema version is in its _meta (absent: an index created before versions, version 0).
    const meta = troupeMetaSchema.safeParse(stored && typeof stored["troupe"] === "object" ? { troupe: readVersionField("vector-metadata", stored["troupe"]) } : stored);
    if (!meta.success) {
      throw new Error(`refusing to use Elasticsearch index ${this.index}: it exists but was not created by Troupe (no _meta.troupe with model and dimensions)`);
    }
    assertSameIndexMeta(this.index, meta.data.troupe, { model: this.model, dimensions: this.dimensions });
    this.opened = true;
    this.logger?.info("vector index ready", { backend: "elasticsearch", index: this.index, model: this.model, dimensions: this.dimensions });
  }

  add(records: readonly VectorRecord[]): Promise<void> {
    return this.addBulk(records, { refresh: "wait_for" });
  }

  /** One `_bulk` request; callers batch (a few hundred 768-dim vectors is a few MB). */
  async addBulk(records: readonly VectorRecord[], options: BulkAddOptions = {}): Promise<void> {
    this.requireOpen();
    const checked = checkRecords(records, this, this.limits);
    if (checked.length === 0) return;
    const reservations = await this.reserve(checked);
    const refresh = options.refresh ?? "wait_for";
    let written = false;
    try {
      const operations: unknown[] = [];
      for (const record of checked) {
        operations.push({ index: { _index: this.index, _id: documentId(record.organization_id, record.id) } }, toDocument(record));
      }
      const response = await this.call("index records", () => this.client.bulk({ operations, refresh }, { requestTimeout: this.bulkTimeoutMs }));
      written = true;
      if (response.errors) {
        const failed = response.items.map((item) => item.index).filter((item) => item?.error);
        const first = failed[0];
        const reason = first?.error ? `${first.error.type}: ${first.error.reason ?? ""}` : "unknown";
        // Items are upserts by id, so the caller can retry the whole batch safely.
        throw new TroupeError("service_unavailable", `Elasticsearch refused ${failed.length} of ${checked.length} records: ${reason}`, {
          details: { failed: failed.length, first_status: first?.status },
        });
      }
    } finally {
      // Unrefreshed records stay reserved until refresh() makes them countable.
      if (refresh === false && written) this.awaitingRefresh.push(...reservations);
      else for (const reservation of reservations) this.ledger.settle(reservation);
    }
  }

  async checkQuota(organizationId: string, adding: number): Promise<void> {
    this.requireOpen();
    const readAt = this.ledger.beginRead();
    try {
      const held = (await this.storedCount(organizationId)) + this.ledger.held(organizationId, readAt);
      if (held + adding > this.limits.quotaPerOrganization) throw quotaExceeded(held, adding, this.limits);
    } finally {
      this.ledger.endRead(readAt);
    }
  }

  /** Makes everything indexed so far searchable (after addBulk with refresh false). */
  async refresh(): Promise<void> {
    const settled = this.awaitingRefresh;
    this.awaitingRefresh = [];
    try {
      await this.call("refresh the index", () => this.client.indices.refresh({ index: this.index }, { requestTimeout: this.bulkTimeoutMs }));
    } finally {
      for (const reservation of settled) this.ledger.settle(reservation);
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
    const filters: Array<{ term: Record<string, string> }> = [{ term: { organization_id: query.organizationId } }];
    if (query.metadataKind !== undefined) filters.push({ term: { kind: query.metadataKind } });
    const response = await this.call("search", () =>
      this.client.search({
        index: this.index,
        knn: {
          field: "vector",
          query_vector: Array.from(query.unit),
          k: query.topK,
          num_candidates: Math.max(query.topK, this.numCandidates(query.topK)),
          filter: filters,
        },
        size: query.topK,
        _source: ["record_id", "content", "metadata", "model"],
      }, this.short()),
    );
    const parsed = searchResponseSchema.safeParse(response);
    if (!parsed.success) {
      throw new TroupeError("service_unavailable", `Elasticsearch answered an unexpected search response: ${z.prettifyError(parsed.error)}`);
    }
    return parsed.data.hits.hits.map((hit) => ({
      id: hit._source.record_id,
      content: hit._source.content,
      metadata: hit._source.metadata,
      model: hit._source.model,
      // cosine _score = (1 + cos) / 2, so 1 − cos = 2 (1 − _score).
      distance: cosineDistance(1 - 2 * (1 - (hit._score ?? 0))),
    }));
  }

  async deleteOrganization(organizationId: string): Promise<number> {
    // Search-then-bulk-delete rather than _delete_by_query, which lives in the
    // reindex module that minimal distributions (the integ-test zip) leave out.
    // Each bulk waits for its refresh, so the next search no longer sees it.
    let deleted = 0;
    for (;;) {
      const found = await this.call("find the organization's records", () =>
        this.client.search({ index: this.index, query: { term: { organization_id: organizationId } }, size: 1000, _source: false }, this.short()),
      );
      const ids = found.hits.hits.map((hit) => hit._id).filter((id): id is string => typeof id === "string");
      if (ids.length === 0) return deleted;
      await this.call("delete the organization's records", () =>
        this.client.bulk({ operations: ids.map((id) => ({ delete: { _index: this.index, _id: id } })), refresh: "wait_for" }, { requestTimeout: this.bulkTimeoutMs }),
      );
      deleted += ids.length;
    }
  }

  async close(): Promise<void> {
    this.opened = false;
    await this.client.close();
  }

  /**
   * Counts each organization's stored records, then checks every
   * organization's quota and reserves the batch in one synchronous step;
   * throws quota_exceeded having reserved and written nothing.
   */
  private async reserve(checked: readonly CheckedRecord[]): Promise<Reservation[]> {
    const groups = [...byOrganization(checked)];
    const readAt = this.ledger.beginRead();
    try {
      const counted = await Promise.all(
        groups.map(async ([organizationId, group]) => {
          const stored = await this.storedCount(organizationId);
          // Near the quota, upserts of stored ids must not count as new records.
          const near = stored + this.ledger.held(organizationId, readAt) + group.length > this.limits.quotaPerOrganization;
          const fresh = near ? await this.newRecordCount(organizationId, group) : group.length;
          return { organizationId, stored, fresh };
        }),
      );
      for (const { organizationId, stored, fresh } of counted) {
        const held = stored + this.ledger.held(organizationId, readAt);
        if (held + fresh > this.limits.quotaPerOrganization) throw quotaExceeded(held, fresh, this.limits);
      }
      return counted.map(({ organizationId, fresh }) => this.ledger.reserve(organizationId, fresh));
    } finally {
      this.ledger.endRead(readAt);
    }
  }

  private async storedCount(organizationId: string): Promise<number> {
    const response = await this.call("count the organization's records", () =>
      this.client.count({ index: this.index, query: { term: { organization_id: organizationId } } }, this.short()),
    );
    const parsed = countResponseSchema.safeParse(response);
    if (!parsed.success) throw new TroupeError("service_unavailable", `Elasticsearch answered an unexpected count response: ${z.prettifyError(parsed.error)}`);
    return parsed.data.count;
  }

  private async newRecordCount(organizationId: string, group: readonly CheckedRecord[]): Promise<number> {
    const ids = [...new Set(group.map((record) => documentId(organizationId, record.id)))];
    const response = await this.call("look up existing records", () => this.client.mget({ index: this.index, ids, _source: false }, this.short()));
    const parsed = mgetResponseSchema.safeParse(response);
    if (!parsed.success) throw new TroupeError("service_unavailable", `Elasticsearch answered an unexpected mget response: ${z.prettifyError(parsed.error)}`);
    return parsed.data.docs.filter((doc) => doc.found !== true).length;
  }

  private async createIndex(): Promise<void> {
    try {
      await this.client.indices.create(
        {
          index: this.index,
          settings: {
            number_of_shards: 1,
            auto_expand_replicas: "0-1",
            // A search walks the graph (vex) and reads the vectors it reaches (vec)
            // at random: from disk rather than the page cache, one at a million
            // vectors took over 5 s. Preloaded, a segment is read in when opened.
            // Small segments keep all their files in one compound file (cfs).
            ...(this.preloadVectors ? { "index.store.preload": ["vec", "vex", "cfs"] } : {}),
          },
          mappings: {
            dynamic: "strict",
            _meta: { troupe: { schema_version: SCHEMA_VERSION, model: this.model, dimensions: this.dimensions } },
            properties: {
              organization_id: { type: "keyword" },
              record_id: { type: "keyword" },
              // Returned, never searched as text: no analysis, no inverted index.
              content: { type: "text", index: false },
              metadata: { type: "object", enabled: false },
              // metadata.kind copied out so memories can be filtered inside the knn.
              kind: { type: "keyword" },
              model: { type: "keyword" },
              created_at: { type: "date" },
              vector: {
                type: "dense_vector",
                dims: this.dimensions,
                index: true,
                similarity: "cosine",
                // Float HNSW: the default (bbq_hnsw, 1-bit) measured recall@10 0.71 here.
                index_options: { type: "hnsw", m: this.hnsw.m, ef_construction: this.hnsw.efConstruction },
              },
            },
          },
        },
        { requestTimeout: Math.max(this.requestTimeoutMs, Math.min(30_000, this.bulkTimeoutMs)) },
      );
      this.logger?.info("vector index created", { backend: "elasticsearch", index: this.index });
    } catch (error) {
      // Another replica created it first: fine, the mapping check follows.
      if (error instanceof errors.ResponseError && error.body?.error?.type === "resource_already_exists_exception") return;
      throw this.unavailable("create the index", error);
    }
  }

  private short(): { requestTimeout: number } {
    return { requestTimeout: this.requestTimeoutMs };
  }

  private requireOpen(): void {
    if (!this.opened) throw new Error("vector index is not open: call open() first");
  }

  private async call<T>(what: string, request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (error) {
      throw this.unavailable(what, error);
    }
  }

  private unavailable(what: string, error: unknown): TroupeError {
    if (error instanceof TroupeError) return error;
    if (error instanceof errors.ResponseError) {
      const body: unknown = error.body;
      const reason = z.object({ error: z.object({ type: z.string(), reason: z.string().optional() }) }).safeParse(body);
      const detail = reason.success ? `${reason.data.error.type}: ${reason.data.error.reason ?? ""}` : `HTTP ${error.statusCode}`;
      // No `cause`: the client's error carries the whole request (megabytes of vectors) into logs.
      return new TroupeError("service_unavailable", `Elasticsearch could not ${what} (index ${this.index}): ${detail}`);
    }
    const message = error instanceof Error ? error.message : String(error);
    return new TroupeError("service_unavailable", `Elasticsearch is unreachable: ${message} (${this.url}, while trying to ${what})`, {
      retryAfterSeconds: 5,
    });
  }
}

/** One document per (organization, id): organizations can never overwrite each other. */
function documentId(organizationId: string, id: string): string {
  return `${organizationId}:${id}`;
}

function toDocument(record: CheckedRecord): Record<string, unknown> {
  return {
    organization_id: record.organization_id,
    record_id: record.id,
    content: record.content,
    metadata: record.metadata,
    kind: record.kind ?? null,
    model: record.model,
    created_at: record.created_at,
    // Unit length already: ES would normalise for cosine anyway, and the
    // reported distance then matches exact cosine.
    vector: Array.from(record.unit),
  };
}
