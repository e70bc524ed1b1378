// The semantic layer of the response cache (docs/guides/caching.md,
// "Semantic cache"): after an exact miss, a project that turned it on may be
// served the answer stored for an earlier request whose context is identical
// (semantic-context.ts) and whose last user message is within the project's
// cosine threshold of this one. The exact cache owns the answers; this
// module owns only vectors that point at exact entries by key, so an answer
// is never stored twice and a vector whose entry is gone is never served.
//
// Vectors live in the cache's own vector indexes (semantic-index.ts: one per
// embedding model, never the organization's /v1/vector-index data), scoped
// per organization and project, partitioned by (environment, context): a
// search only ever reads the partition of one environment's one context.
import { createHash } from "node:crypto";
import { isoTime, type Clock } from "../../core/clock.ts";
import type { DataStore, StoreOp } from "../../core/data-store.ts";
import type { Logger } from "../../core/log.ts";
import type { EmbeddingUsage } from "../../vectors/org-index.ts";
import type { VectorIndex, VectorRecord } from "../../vectors/vector-index.ts";
import type { ChatRequest } from "../../providers/chat-request.ts";
import type { KeyOwner } from "./cache-key.ts";
import { semanticContext, type SemanticIneligibility } from "./semantic-context.ts";
import type { CacheScope, CachedAnswer } from "./types.ts";

/** A project's semantic settings, passed only when the project turned semantic on. */
export interface SemanticSettings {
  /** Cosine similarity a stored question must reach (0–1]; chosen on test/fixtures/semantic-cache-pairs.json. */
  threshold: number;
  /** Catalogue id of the embedding model; its calls are billed to the project. */
  embeddingModel: string;
}


export interface SemanticEmbedding {
  vector: number[];
  usage: EmbeddingUsage;
}
/** Embeds one text with a named model (the gateway's: router.embed, routing manual). */
export type SemanticEmbedder = (model: string, text: string, signal?: AbortSignal) => Promise<SemanticEmbedding>;
/** The cache's vector index for one embedding model, open (semantic-index.ts). */
export type SemanticIndexOpener = (model: string) => Promise<VectorIndex>;

export interface SemanticCacheDeps {
  store: DataStore;
  embed: SemanticEmbedder;
  openIndex: SemanticIndexOpener;
  clock: Clock;
  logger?: Logger | undefined;
}

export interface SemanticHit {
  /** The exact cache's key of the answer to serve. */
  key: string;
  /** Cosine similarity of the two last user messages. */
  similarity: number;
  embeddingModel: string;
}

/** A lookup's outcome; `remember` takes it back once the answer to a miss is stored. */
export type SemanticProbe =
  | { eligible: false; reason: SemanticIneligibility }
  | { eligible: true; embeddingModel: string; hit: SemanticHit | undefined; readonly pending: PendingVector };

/** The vector a lookup embedded, kept so storing the answer costs no second embedding call. */
interface PendingVector {
  scope: CacheScope;
  kind: string;
  vector: number[];
}

export interface LookupOptions {
  signal?: AbortSignal | undefined;
  /** Told the embedding call's usage: the caller bills it (a lookup embeds the last user message). */
  onUsage?: ((usage: EmbeddingUsage) => void) | undefined;
  /** Whether the exact cache still holds a key (expired, evicted or cleared entries are not served). */
  entryExists: (key: string) => Promise<boolean>;
}

/** Candidates read per lookup: the best may point at an entry gone since. */
const CANDIDATES = 4;
/**
 * 60 s: a vector younger than this whose entry is missing is left alone.
 * The exact cache writes its entry off the answer's path, beside this
 * vector, so for a moment the vector may be searchable before the entry is
 * readable; far longer than that write takes, far shorter than any TTL.
 */
const ENTRY_WRITE_GRACE_MS = 60_000;
/** The partition no lookup reads: where a removed entry's vector is moved (the index interface has no per-record delete). */
const REMOVED_KIND = "sc1:removed";
/** Registry of (project, model) pairs holding vectors, per organization, so clearing and erasure find every index. */
const registryKey = (organizationId: string) => `semantic-cache:indexes:${organizationId}`;
const REGISTRY_PAGE = 500;

export class SemanticCache {
  private readonly deps: SemanticCacheDeps;

  constructor(deps: SemanticCacheDeps) {
    this.deps = deps;
  }

  /**
   * Embeds the last user message (billed through `onUsage`) and searches the
   * scope's partition for this context; the best candidate within the
   * threshold whose exact entry still exists is the hit.
   */
  async lookup(owner: KeyOwner, request: ChatRequest, category: string | undefined, settings: SemanticSettings, options: LookupOptions): Promise<SemanticProbe> {
    const split = semanticContext(owner, request, category);
    if (!split.eligible) return split;
    const model = settings.embeddingModel;
    const index = await this.deps.openIndex(model);
    const { vector, usage } = await this.deps.embed(model, split.context.lastUserMessage, options.signal);
    options.onUsage?.(usage);
    const scope: CacheScope = { organization_id: owner.organization_id, project_id: owner.project_id, environment_id: owner.environment_id };
    const kind = partitionKind(split.context.digest);
    const maxDistance = 1 - settings.threshold;
    const candidates = await index.search(vectorScope(scope), vector, CANDIDATES, { metadataKind: kind });
    let hit: SemanticHit | undefined;
    for (const candidate of candidates) {
      if (candidate.distance > maxDistance) break;
      const key = candidate.metadata["key"];
      if (typeof key !== "string") continue;
      if (await options.entryExists(key)) {
        hit = { key, similarity: 1 - candidate.distance, embeddingModel: model };
        break;
      }
      // The entry expired or was evicted without telling us: its vector must not keep answering.
      const storedMs = candidate.metadata["stored_ms"];
      if (typeof storedMs === "number" && this.deps.clock.now() - storedMs < ENTRY_WRITE_GRACE_MS) continue;
      this.forgetIn(index, scope, key).catch((error: unknown) => this.deps.logger?.warn("semantic cache: removing a stale vector failed", { error: String(error) }));
    }
    return { eligible: true, embeddingModel: model, hit, pending: { scope, kind, vector } };
  }

  /** Stores the missed request's vector beside the exact entry `key`; answers with tool calls are left out (never served semantically). */
  async remember(probe: SemanticProbe, key: string, answer: CachedAnswer): Promise<boolean> {
    if (!probe.eligible || probe.hit) return false;
    if (answer.kind !== "chat" || (answer.result.tool_calls?.length ?? 0) > 0) return false;
    const { scope, kind, vector } = probe.pending;
    const index = await this.deps.openIndex(probe.embeddingModel);
    await this.register(scope, probe.embeddingModel);
    const record: VectorRecord = {
      id: recordId(scope, key),
      organization_id: vectorScope(scope),
      // The question's text is not kept: the vector and the key are all a lookup needs.
      content: "",
      metadata: { kind, key, stored_ms: this.deps.clock.now() },
      model: probe.embeddingModel,
      vector,
      created_at: isoTime(this.deps.clock.now()),
    };
    await index.add([record]);
    return true;
  }

  /** The exact entry `key` was evicted, expired or deleted: its vector stops answering, in every model's index. */
  async forget(scope: CacheScope, key: string): Promise<void> {
    for (const model of await this.modelsOf(scope.organization_id, scope.project_id)) {
      await this.forgetIn(await this.deps.openIndex(model), scope, key);
    }
  }

  /** A project's "clear cache": every vector of the project, in every model's index, is deleted. */
  async clearProject(organizationId: string, projectId: string): Promise<number> {
    return this.deleteScopes(organizationId, (member) => member.projectId === projectId);
  }

  /** Organization deletion: every vector of every project of the organization is deleted. */
  async deleteOrganization(organizationId: string): Promise<number> {
    return this.deleteScopes(organizationId, () => true);
  }

  /** The (project, model) scopes the organization's vectors are in (of `projectIds` only, when given): what another replica's own index must delete too. */
  async scopesOf(organizationId: string, projectIds?: readonly string[]): Promise<SemanticScope[]> {
    const members = await this.registryMembers(organizationId);
    return members.filter((m) => !projectIds || projectIds.includes(m.projectId)).map((m) => ({ project_id: m.projectId, model: m.model }));
  }

  /**
   * Deletes the scopes' vectors from this replica's own index, the registry
   * untouched: what a replica whose index is not shared (embedded, no
   * Elasticsearch) does when another replica cleared them.
   */
  async deleteScopesHere(organizationId: string, scopes: readonly SemanticScope[]): Promise<number> {
    let deleted = 0;
    for (const scope of scopes) {
      const index = await this.deps.openIndex(scope.model);
      deleted += await index.deleteOrganization(vectorScope({ organization_id: organizationId, project_id: scope.project_id }));
    }
    return deleted;
  }

  private async deleteScopes(organizationId: string, include: (member: RegistryMember) => boolean): Promise<number> {
    const members = (await this.registryMembers(organizationId)).filter(include);
    let deleted = 0;
    for (const member of members) {
      const index = await this.deps.openIndex(member.model);
      deleted += await index.deleteOrganization(vectorScope({ organization_id: organizationId, project_id: member.projectId }));
    }
    const ops: StoreOp[] = members.map((m) => ({ op: "unindex", key: registryKey(organizationId), member: m.raw }));
    if (ops.length > 0) await this.deps.store.apply(ops);
    return deleted;
  }

  /** Moves the entry's vector to the partition no lookup reads (an upsert by the same id). */
  private async forgetIn(index: VectorIndex, scope: CacheScope, key: string): Promise<void> {
    const vector = new Array<number>(index.dimensions).fill(0);
    vector[0] = 1;
    await index.add([
      { id: recordId(scope, key), organization_id: vectorScope(scope), content: "", metadata: { kind: REMOVED_KIND }, model: index.model, vector, created_at: isoTime(this.deps.clock.now()) },
    ]);
  }

  /**
   * Written before every vector, not once per process: another replica's
   * clear may have removed the member since. A vector added while a clear
   * runs may outlive it, but never unlisted for long: the next answer stored
   * for the project lists its scope again, and deletion is by scope.
   */
  private async register(scope: CacheScope, model: string): Promise<void> {
    const raw = JSON.stringify([scope.project_id, model]);
    await this.deps.store.apply([{ op: "index", key: registryKey(scope.organization_id), member: raw, score: this.deps.clock.now() }]);
  }

  private async modelsOf(organizationId: string, projectId: string): Promise<string[]> {
    return (await this.registryMembers(organizationId)).filter((m) => m.projectId === projectId).map((m) => m.model);
  }

  private async registryMembers(organizationId: string): Promise<RegistryMember[]> {
    const members: RegistryMember[] = [];
    let cursor: string | null = null;
    do {
      const page = await this.deps.store.page(registryKey(organizationId), REGISTRY_PAGE, cursor);
      for (const raw of page.members) {
        const parsed = parseMember(raw);
        if (parsed) members.push(parsed);
      }
      cursor = page.nextCursor;
    } while (cursor !== null);
    return members;
  }
}

/** A project's vectors of one embedding model. */
export interface SemanticScope {
  project_id: string;
  model: string;
}

interface RegistryMember {
  raw: string;
  projectId: string;
  model: string;
}

function parseMember(raw: string): RegistryMember | undefined {
  try {
    const value: unknown = JSON.parse(raw);
    if (Array.isArray(value) && value.length === 2 && typeof value[0] === "string" && typeof value[1] === "string") return { raw, projectId: value[0], model: value[1] };
  } catch {
    // A member this module did not write: not ours to delete.
  }
  return undefined;
}

/** The vector index's "organization" for the cache: one per organization and project, so a project's clear is one deletion. */
export function vectorScope(scope: Pick<CacheScope, "organization_id" | "project_id">): string {
  return `${scope.organization_id}/${scope.project_id}`;
}

/** The partition a lookup reads: the context digest already holds the organization and environment. */
export function partitionKind(contextDigest: string): string {
  return `sc1:${contextDigest}`;
}

/** A record id (a UUID, as the index requires) fixed by the entry: storing an entry again replaces its vector. */
export function recordId(scope: CacheScope, key: string): string {
  const hex = createHash("sha256").update(`${scope.organization_id}\n${scope.project_id}\n${key}`).digest("hex");
  const variant = ((parseInt(hex[16] as string, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
