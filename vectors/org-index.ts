// The organization's searchable knowledge: embeds text with the one fixed
// index model (routing `manual`) and stores or searches it in the
// vector index. /v1/embeddings/index and /search and the agents' memory
// tools all go through here, so an agent can find what was indexed over HTTP.
// A record can be prepared (checked and embedded) apart from being stored:
// an agent's `remember` prepares it inside the turn and stores it once the
// turn commits, and its searches meanwhile rank it among the stored ones.
import { isoTime, type Clock } from "../core/clock.ts";
import { invalidRequest } from "../core/errors.ts";
import { uuid } from "../core/ids.ts";
import { dot } from "./partition-math.ts";
import {
  cosineDistance,
  kindOf,
  MAX_TOP_K,
  recordLimitIssues,
  unitVector,
  type VectorIndex,
  type VectorRecord,
  type VectorSearchFilter,
  type VectorSearchResult,
} from "./vector-index.ts";

/** What an embedding call used, for billing (the caller's meter turns it into a usage record). */
export interface EmbeddingUsage {
  model: string;
  provider: string;
  input_tokens: number;
}
/** Told each embedding call's usage: how indexing and the agents' memory tools get billed. */
export type OnEmbedded = (usage: EmbeddingUsage) => void;

/** Embeds texts with the index model; `purpose` lets providers like Cohere pick their input type. */
export type Embedder = (texts: string[], purpose: "document" | "query", signal?: AbortSignal, onUsage?: OnEmbedded) => Promise<number[][]>;

/** Content beyond this is refused (400): one record is one passage, not a book. */
export const MAX_CONTENT_CHARS = 32_768;

export interface OrgIndexDeps {
  index: VectorIndex;
  embed: Embedder;
  clock: Clock;
}

export class OrgIndex {
  private readonly deps: OrgIndexDeps;

  constructor(deps: OrgIndexDeps) {
    this.deps = deps;
  }

  get model(): string {
    return this.deps.index.model;
  }

  async add(organizationId: string, content: string, metadata: Record<string, unknown>, signal?: AbortSignal, onUsage?: OnEmbedded): Promise<{ id: string; model: string }> {
    const record = await this.prepare({ organizationId, id: uuid(), content, metadata, signal, onUsage });
    await this.store([record]);
    return { id: record.id, model: record.model };
  }

  /**
   * Checks and embeds a record without storing it: refused (4xx) for what the
   * index would refuse, the quota included, counting `unstoredHeld` records
   * already accepted but not stored yet. Upserted by `id` once stored.
   */
  async prepare(draft: RecordDraft): Promise<VectorRecord> {
    const { organizationId, content, metadata } = draft;
    if (content.trim().length === 0) throw invalidRequest([{ path: "body.content", message: "must not be empty" }]);
    if (content.length > MAX_CONTENT_CHARS) throw invalidRequest([{ path: "body.content", message: `must be at most ${MAX_CONTENT_CHARS} characters` }]);
    // Before the embedding call: a record the index would refuse costs nothing.
    const issues = recordLimitIssues(content, metadata, this.deps.index.limits, "body.");
    if (issues.length > 0) throw invalidRequest(issues);
    if (draft.unstoredHeld !== undefined) await this.deps.index.checkQuota(organizationId, draft.unstoredHeld + 1);
    const [vector] = await this.deps.embed([content], "document", draft.signal, draft.onUsage);
    if (!vector) throw new Error("the embedder returned no vector");
    return { id: draft.id, organization_id: organizationId, content, metadata, model: this.deps.index.model, vector, created_at: isoTime(this.deps.clock.now()) };
  }

  /** Stores prepared records; storing one again (same organization and id) replaces it, so a repeat stores nothing twice. */
  async store(records: readonly VectorRecord[]): Promise<void> {
    await this.deps.index.add(records);
  }

  async search(
    organizationId: string,
    query: string,
    topK: number,
    filter?: VectorSearchFilter,
    signal?: AbortSignal,
    onUsage?: OnEmbedded,
    unstored: readonly VectorRecord[] = [],
  ): Promise<VectorSearchResult[]> {
    if (query.trim().length === 0) throw invalidRequest([{ path: "body.query", message: "must not be empty" }]);
    if (!Number.isInteger(topK) || topK < 1 || topK > MAX_TOP_K) throw invalidRequest([{ path: "body.top_k", message: `must be an integer from 1 to ${MAX_TOP_K}` }]);
    const [vector] = await this.deps.embed([query], "query", signal, onUsage);
    if (!vector) throw new Error("the embedder returned no vector");
    const stored = await this.deps.index.search(organizationId, vector, topK, filter);
    return unstored.length === 0 ? stored : rankWithUnstored(stored, unstored, organizationId, vector, topK, filter);
  }
}

/** What prepare() takes: the record's place, id and text, and what its embedding is billed to. */
export interface RecordDraft {
  organizationId: string;
  id: string;
  content: string;
  metadata: Record<string, unknown>;
  /** Records of the organization accepted but not stored yet (they count against the quota); undefined: the index's add checks it. */
  unstoredHeld?: number;
  signal?: AbortSignal | undefined;
  onUsage?: OnEmbedded | undefined;
}

/**
 * The closest `topK` of the stored results and the organization's unstored
 * records (scored exactly, by the cosine distance every backend answers); an
 * unstored record replaces a stored one of the same id.
 */
function rankWithUnstored(
  stored: readonly VectorSearchResult[],
  unstored: readonly VectorRecord[],
  organizationId: string,
  queryVector: readonly number[],
  topK: number,
  filter: VectorSearchFilter | undefined,
): VectorSearchResult[] {
  const query = unitVector(queryVector, queryVector.length);
  if (typeof query === "string") throw new Error(`the embedder returned an unusable vector: ${query}`);
  const scored: VectorSearchResult[] = [];
  for (const record of unstored) {
    if (record.organization_id !== organizationId) continue;
    if (filter?.metadataKind !== undefined && kindOf(record.metadata) !== filter.metadataKind) continue;
    const unit = unitVector(record.vector, query.length);
    if (typeof unit === "string") continue;
    scored.push({ id: record.id, content: record.content, metadata: record.metadata, model: record.model, distance: cosineDistance(dot(unit, 0, query, query.length)) });
  }
  const replaced = new Set(scored.map((r) => r.id));
  return [...scored, ...stored.filter((r) => !replaced.has(r.id))].sort((a, b) => a.distance - b.distance).slice(0, topK);
}
