// The organization-scoped vector index behind /v1/embeddings/index,
// /v1/embeddings/search and the agents' memory tools (docs/api/embeddings-and-vector-index.md;
// memories are records with metadata.kind = "memory"). Two backends implement
// it — embedded exact search and Elasticsearch — and one shared test suite
// runs against both. This module holds the interface and the boundary checks
// both backends share, so they validate and refuse in exactly the same way.
import { z } from "zod";
import { invalidRequest, TroupeError, type FieldIssue } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";

/** The HTTP layer answers 400 outside this range (never clamps); the index refuses it too. */
export const MAX_TOP_K = 100;
/** Elasticsearch's dense_vector limit; embedded follows it so both accept the same input. */
export const MAX_DIMENSIONS = 4096;

/**
 * What one organization may put in the index (docs/api/embeddings-and-vector-index.md; VECTOR_* settings
 * in core/config.ts). Sizes are UTF-8 bytes of the JSON text, which is what a
 * search response carries, so a response is at most
 * top_k × (contentMaxBytes + metadataMaxBytes + ~200 B): 7.8 MiB by default.
 */
export interface VectorLimits {
  contentMaxBytes: number;
  metadataMaxBytes: number;
  /** The metadata object itself is level 1; each nested object or array adds one. */
  metadataMaxDepth: number;
  /** Records one organization may hold; an add past it is 403 quota_exceeded. */
  quotaPerOrganization: number;
}

/** The defaults of core/config.ts (a test keeps the two equal), for indexes built without a config. */
export const defaultVectorLimits: Readonly<VectorLimits> = Object.freeze({
  contentMaxBytes: 64 * 1024,
  metadataMaxBytes: 16 * 1024,
  metadataMaxDepth: 16,
  quotaPerOrganization: 100_000,
});

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

/** What every backend is opened with, besides where it keeps its data. */
export interface VectorIndexOptions extends VectorIndexMeta {
  /** Size caps and the per-organization quota (default: defaultVectorLimits). */
  limits?: Readonly<VectorLimits>;
  logger?: Logger;
}

export interface VectorIndex {
  readonly backend: "embedded" | "elasticsearch";
  readonly model: string;
  readonly dimensions: number;
  readonly limits: Readonly<VectorLimits>;
  /** What an existing index was built with; undefined when it does not exist yet. Callable before open(). */
  storedMeta(): Promise<VectorIndexMeta | undefined>;
  /** Creates the index if missing (or loads it), then refuses a model/dimension mismatch. */
  open(): Promise<void>;
  /**
   * Upserts by (organization_id, id); resolves once the records are durable and
   * searchable. A batch that would take an organization past its quota is
   * refused whole (403 quota_exceeded) and nothing of it is written.
   */
  add(records: readonly VectorRecord[]): Promise<void>;
  /**
   * Refuses (403 quota_exceeded, as add would) when `adding` new records would
   * take the organization past its quota now. Reserves nothing: add checks
   * again. For a caller that stores later what it accepts now (an agent's
   * `remember`, written once its turn commits), so the refusal still reaches
   * whoever can act on it.
   */
  checkQuota(organizationId: string, adding: number): Promise<void>;
  /** The organization's topK nearest records, ascending by cosine distance. */
  search(
    organizationId: string,
    queryVector: readonly number[] | Float32Array,
    topK: number,
    filter?: VectorSearchFilter,
  ): Promise<VectorSearchResult[]>;
  /** Deletes every record of the organization (deleting an organization); answers how many went. Durable and no longer searchable once it resolves. */
  deleteOrganization(organizationId: string): Promise<number>;
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

/** UTF-8 bytes of a value's JSON text, or undefined when it is not JSON (a cycle, a BigInt). */
function jsonBytes(value: unknown): number | undefined {
  try {
    const text = JSON.stringify(value);
    return text === undefined ? undefined : Buffer.byteLength(text, "utf8");
  } catch {
    return undefined;
  }
}

/** True when `value` nests deeper than `maxDepth` levels; stops walking at that depth. */
function nestsDeeperThan(value: unknown, maxDepth: number): boolean {
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 1 }];
  while (stack.length > 0) {
    const top = stack.pop() as { value: unknown; depth: number };
    if (top.value === null || typeof top.value !== "object") continue;
    if (top.depth > maxDepth) return true;
    for (const child of Object.values(top.value)) stack.push({ value: child, depth: top.depth + 1 });
  }
  return false;
}

/**
 * The size and depth caps on one record's content and metadata, as field
 * issues under `prefix` (e.g. "records[3]."). OrgIndex runs them before it
 * pays for an embedding; every backend runs them again in checkRecords.
 */
export function recordLimitIssues(content: string, metadata: Record<string, unknown>, limits: Readonly<VectorLimits>, prefix = ""): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const contentBytes = jsonBytes(content) ?? Number.POSITIVE_INFINITY;
  // - 2: the JSON string's quotes are not the caller's.
  if (contentBytes - 2 > limits.contentMaxBytes) {
    issues.push({ path: `${prefix}content`, message: `must be at most ${limits.contentMaxBytes} bytes as JSON (UTF-8), got ${contentBytes - 2}` });
  }
  if (nestsDeeperThan(metadata, limits.metadataMaxDepth)) {
    issues.push({ path: `${prefix}metadata`, message: `must nest at most ${limits.metadataMaxDepth} levels deep` });
    return issues;
  }
  const metadataBytes = jsonBytes(metadata);
  if (metadataBytes === undefined) issues.push({ path: `${prefix}metadata`, message: "must be a JSON object" });
  else if (metadataBytes > limits.metadataMaxBytes) {
    issues.push({ path: `${prefix}metadata`, message: `must be at most ${limits.metadataMaxBytes} bytes as JSON (UTF-8), got ${metadataBytes}` });
  }
  return issues;
}

/** 403 quota_exceeded naming the quota; `held` counts the records already stored (and reserved). */
export function quotaExceeded(held: number, adding: number, limits: Readonly<VectorLimits>): TroupeError {
  return new TroupeError(
    "quota_exceeded",
    `The organization's vector index holds ${held} records and its quota is ${limits.quotaPerOrganization}; adding ${adding} more would exceed it.`,
    { details: { quota: limits.quotaPerOrganization, held, adding } },
  );
}

/** Records per organization, in the batch's order. */
export function byOrganization(records: readonly CheckedRecord[]): Map<string, CheckedRecord[]> {
  const groups = new Map<string, CheckedRecord[]>();
  for (const record of records) {
    const group = groups.get(record.organization_id);
    if (group) group.push(record);
    else groups.set(record.organization_id, [record]);
  }
  return groups;
}

export function checkRecords(records: readonly VectorRecord[], meta: VectorIndexMeta, limits: Readonly<VectorLimits>): CheckedRecord[] {
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
    const limitIssues = recordLimitIssues(parsed.data.content, parsed.data.metadata, limits, `records[${i}].`);
    if (limitIssues.length > 0) {
      issues.push(...limitIssues);
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
