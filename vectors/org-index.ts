// The organization's searchable knowledge: embeds text with the one fixed
// index model (routing `manual`) and stores or searches it in the
// vector index. /v1/embeddings/index and /search and the agents' memory
// tools all go through here, so an agent can find what was indexed over HTTP.
import { isoTime, type Clock } from "../core/clock.ts";
import { invalidRequest } from "../core/errors.ts";
import { uuid } from "../core/ids.ts";
import { MAX_TOP_K, recordLimitIssues, type VectorIndex, type VectorSearchFilter, type VectorSearchResult } from "./vector-index.ts";

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
    if (content.trim().length === 0) throw invalidRequest([{ path: "body.content", message: "must not be empty" }]);
    if (content.length > MAX_CONTENT_CHARS) throw invalidRequest([{ path: "body.content", message: `must be at most ${MAX_CONTENT_CHARS} characters` }]);
    // Before the embedding call: a record the index would refuse costs nothing.
    const issues = recordLimitIssues(content, metadata, this.deps.index.limits, "body.");
    if (issues.length > 0) throw invalidRequest(issues);
    const [vector] = await this.deps.embed([content], "document", signal, onUsage);
    if (!vector) throw new Error("the embedder returned no vector");
    const id = uuid();
    await this.deps.index.add([{ id, organization_id: organizationId, content, metadata, model: this.deps.index.model, vector, created_at: isoTime(this.deps.clock.now()) }]);
    return { id, model: this.deps.index.model };
  }

  async search(
    organizationId: string,
    query: string,
    topK: number,
    filter?: VectorSearchFilter,
    signal?: AbortSignal,
    onUsage?: OnEmbedded,
  ): Promise<VectorSearchResult[]> {
    if (query.trim().length === 0) throw invalidRequest([{ path: "body.query", message: "must not be empty" }]);
    if (!Number.isInteger(topK) || topK < 1 || topK > MAX_TOP_K) throw invalidRequest([{ path: "body.top_k", message: `must be an integer from 1 to ${MAX_TOP_K}` }]);
    const [vector] = await this.deps.embed([query], "query", signal, onUsage);
    if (!vector) throw new Error("the embedder returned no vector");
    return this.deps.index.search(organizationId, vector, topK, filter);
  }
}
