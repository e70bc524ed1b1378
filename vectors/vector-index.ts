// The organization-scoped vector index behind /v1/embeddings/index,
// /v1/embeddings/search and the agents' memory tools (DESIGN.md §1, §4:
// memories are records with metadata.kind = "memory"). Two backends implement
// it — embedded exact search and Elasticsearch — and one shared test suite
// runs against both. This module holds the interface and the boundary checks
// both backends share, so they validate and refuse in exactly the same way.
import { z } from "zod";
import { invalidRequest, type FieldIssue } from "../core/errors.ts";

/** The HTTP layer answers 400 outside this range (DESIGN.md §4); the index refuses it too. */
export const MAX_TOP_K = 100;
/** Elasticsearch's dense_vector limit; embedded follows it so both accept the same input. */
export const MAX_DIMENSIONS = 4096;

export interface VectorRecord {
  id: string;
  organization_id: string;
  content: string;
  /** Free-form JSON object; `metadata.kind` (a string) is indexed for filtering. */
  metadata: Record<string, unknown>;
  /** Embedding model that produced `vector`; must be the index's model. */
  model: string;
  vector: readonly number[] | Float32Array;
  /** ISO 8601 UTC. */
  created_at: string;
}

export interface VectorSearchResult {
  id: string;
  content: string;
  metadata: Record<string, unknown>;
  model: string;
  /** Cosine distance 1 − cos(query, record): 0 is identical, 2 is opposite. */
  distance: number;
}

export interface VectorSearchFilter {
  /** Only records whose metadata.kind equals this (e.g. "memory"). */
  metadataKind?: string;
}

/** What an index was built with, recorded beside its data. */
export interface VectorIndexMeta {
  model: string;
  dimensions: number;
}

export interface VectorIndex {
  readonly backend: "embedded" | "elasticsearch";
  readonly model: string;
  readonly dimensions: number;
  /** Creates the index if missing (or loads it), then refuses a model/dimension mismatch. */
  open(): Promise<void>;
  /** Upserts by (organization_id, id); resolves once the records are durable and searchable. */
  add(records: readonly VectorRecord[]): Promise<void>;
  /** The organization's topK nearest records, ascending by cosine distance. */
  search(
    organizationId: string,
    queryVector: readonly number[] | Float32Array,
    topK: number,
    filter?: VectorSearchFilter,
  ): Promise<VectorSearchResult[]>;
  close(): Promise<void>;
}

export const indexMetaSchema = z.object({
  model: z.string().min(1),
  dimensions: z.number().int().min(1).max(MAX_DIMENSIONS),
});

/**
 * Refuses to open an index built with another model or dimension: mixing
 * vectors from two embedding spaces silently returns nonsense rankings.
 */
export function assertSameIndexMeta(indexName: string, stored: VectorIndexMeta, configured: VectorIndexMeta): void {
  if (stored.model === configured.model && stored.dimensions === configured.dimensions) return;
  throw new Error(
    `refusing to mix vectors: index ${indexName} was built with model ${stored.model} (${stored.dimensions} dims); ` +
      `configured EMBEDDING_INDEX_MODEL is ${configured.model} (${configured.dimensions} dims). ` +
      `Point the index at a new location (ELASTICSEARCH_INDEX or TROUPE_DATA_DIR) and re-index, or configure ${stored.model} again.`,
  );
}

export function assertValidIndexMeta(meta: VectorIndexMeta): void {
  const parsed = indexMetaSchema.safeParse(meta);
  if (!parsed.success) throw new Error(`invalid vector index configuration: ${z.prettifyError(parsed.error)}`);
}

const recordSchema = z.object({
  id: z.uuid(),
  organization_id: z.string().min(1).max(256),
  content: z.string(),
  metadata: z.record(z.string(), z.unknown()),
  model: z.string().min(1),
  created_at: z.iso.datetime({ offset: true }),
});

/** A record after boundary checks: its vector is a unit-length Float32Array. */
export interface CheckedRecord {
  id: string;
  organization_id: string;
  content: string;
  metadata: Record<string, unknown>;
  model: string;
  created_at: string;
  kind: string | undefined;
  /** The vector as given, in float32. */
  vector: Float32Array;
  /** vector / ‖vector‖. */
  unit: Float32Array;
}

/** metadata.kind when it is a string; the field both backends filter on. */
export function kindOf(metadata: Record<string, unknown>): string | undefined {
  const kind = metadata["kind"];
  return typeof kind === "string" ? kind : undefined;
}

/**
 * Returns vector / ‖vector‖ as float32, or an issue message when the vector
 * has the wrong length, a non-finite component, or no direction (cosine is
 * undefined for a zero vector).
 */
export function unitVector(vector: readonly number[] | Float32Array, dimensions: number): Float32Array | string {
  if (vector.length !== dimensions) return `expected ${dimensions} dimensions, got ${vector.length}`;
  let sumSquares = 0;
  for (let i = 0; i < dimensions; i++) {
    const v = vector[i] as number;
    if (typeof v !== "number" || !Number.isFinite(v)) return `component ${i} is not a finite number`;
    sumSquares += v * v;
  }
  if (!(sumSquares > 0)) return "a zero vector has no direction (cosine distance is undefined)";
  const inverseNorm = 1 / Math.sqrt(sumSquares);
  const unit = new Float32Array(dimensions);
  for (let i = 0; i < dimensions; i++) unit[i] = (vector[i] as number) * inverseNorm;
  return unit;
}

export function checkRecords(records: readonly VectorRecord[], meta: VectorIndexMeta): CheckedRecord[] {
  if (!Array.isArray(records)) throw invalidRequest([{ path: "records", message: "must be an array" }]);
  const issues: FieldIssue[] = [];
  const checked: CheckedRecord[] = [];
  records.forEach((record, i) => {
    const parsed = recordSchema.safeParse(record);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        issues.push({ path: [`records[${i}]`, ...issue.path.map(String)].join("."), message: issue.message });
      }
      return;
    }
    if (parsed.data.model !== meta.model) {
      issues.push({ path: `records[${i}].model`, message: `the index holds ${meta.model} vectors, not ${parsed.data.model}` });
      return;
    }
    const vector = record.vector;
    if (!(vector instanceof Float32Array) && !Array.isArray(vector)) {
      issues.push({ path: `records[${i}].vector`, message: "must be an array of numbers" });
      return;
    }
    // Normalise the float32 values that get stored, so a record reloaded from
    // disk has bit-for-bit the unit vector it had when it was added.
    const stored = vector.length === meta.dimensions ? Float32Array.from(vector) : new Float32Array(0);
    const unit = unitVector(vector.length === meta.dimensions ? stored : vector, meta.dimensions);
    if (typeof unit === "string") {
      issues.push({ path: `records[${i}].vector`, message: unit });
      return;
    }
    checked.push({ ...parsed.data, kind: kindOf(parsed.data.metadata), vector: stored, unit });
  });
  if (issues.length > 0) throw invalidRequest(issues);
  return checked;
}

export interface CheckedQuery {
  organizationId: string;
  unit: Float32Array;
  topK: number;
  metadataKind: string | undefined;
}

export function checkQuery(
  organizationId: string,
  queryVector: readonly number[] | Float32Array,
  topK: number,
  filter: VectorSearchFilter | undefined,
  meta: VectorIndexMeta,
): CheckedQuery {
  const issues: FieldIssue[] = [];
  if (typeof organizationId !== "string" || organizationId.length === 0) {
    issues.push({ path: "organization_id", message: "must be a non-empty string" });
  }
  if (!Number.isInteger(topK) || topK < 1 || topK > MAX_TOP_K) {
    issues.push({ path: "top_k", message: `must be an integer from 1 to ${MAX_TOP_K}` });
  }
  const kind = filter?.metadataKind;
  if (kind !== undefined && (typeof kind !== "string" || kind.length === 0)) {
    issues.push({ path: "filter.metadataKind", message: "must be a non-empty string" });
  }
  let unit: Float32Array | string = "must be an array of numbers";
  if (queryVector instanceof Float32Array || Array.isArray(queryVector)) unit = unitVector(queryVector, meta.dimensions);
  if (typeof unit === "string") issues.push({ path: "query_vector", message: unit });
  if (issues.length > 0 || typeof unit === "string") throw invalidRequest(issues);
  return { organizationId, unit, topK, metadataKind: kind };
}

/** Cosine distance from a cosine similarity, kept inside [0, 2] against float rounding. */
export function cosineDistance(cosine: number): number {
  return Math.min(2, Math.max(0, 1 - cosine));
}
