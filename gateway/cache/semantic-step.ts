// The semantic cache's step in a cached router call (semantic-router.ts calls
// it after an exact miss): for a project with semantic on, looks the request
// up by meaning, fetches the exact entry a hit points at, and names what it
// did in the answer's headers; on a miss, hands back how to store the
// answer's vector beside the exact entry once it is kept. A failure of the
// step (an embedding provider down, the index unreachable) is logged and
// makes the call a plain miss: the cache never fails a call.
import type { Logger } from "../../core/log.ts";
import type { ChatRequest } from "../../providers/chat-request.ts";
import type { UsageContext } from "../../providers/usage.ts";
import type { EmbeddingUsage } from "../../vectors/org-index.ts";
import type { KeyOwner } from "./cache-key.ts";
import { cacheMatchHeader } from "./cache-request.ts";
import type { SemanticCache, SemanticHit } from "./semantic.ts";
import type { CacheEntry, CachedAnswer, CacheMode, CacheStore, ProjectCacheSettings } from "./types.ts";

/** What the step reads of the exact cache's per-request control (cache-request.ts's CacheRequest fits it). */
export interface SemanticCallRequest {
  owner: KeyOwner;
  /** Who pays for the request (absent: its lookups are not billed, as session calls are not). */
  payer?: UsageContext | undefined;
  mode: CacheMode;
  /** The answer's head: the step adds its headers here. */
  state: { headers: [string, string][] | undefined };
}

/** The embedding model that served a lookup (a hit or a miss: the lookup was billed either way). */
export const cacheEmbeddingModelHeader = "troupe-cache-embedding-model";
/** A semantic hit's cosine similarity (3 decimals). */
export const cacheSimilarityHeader = "troupe-cache-similarity";

export interface SemanticStepDeps {
  semantic: SemanticCache;
  store: CacheStore;
  /** The embedding model of a project that names none (docs/guides/caching.md: the vector index's model). */
  defaultModel: string;
  /** Bills a lookup's embedding call to the request's payer (category embeddings). */
  bill: (request: SemanticCallRequest, usage: EmbeddingUsage) => void;
  log: Logger;
}

/** The project settings the step reads; `semantic_embedding_model` absent or null: the default model. */
export type SemanticProjectSettings = Pick<ProjectCacheSettings, "semantic_enabled" | "semantic_threshold"> & { semantic_embedding_model?: string | null | undefined };

export type SemanticStepOutcome =
  /** Serve this entry: the caller announces the hit, its age and announceSemanticHit's headers. */
  | { entry: CacheEntry; hit: SemanticHit }
  /** A miss: call `keep` with the exact entry's key once the answer is stored there. */
  | { entry: undefined; keep: (key: string, answer: CachedAnswer) => void };

/**
 * Undefined when semantic has no say (off, `bypass`, or a request it never
 * takes): the exact cache goes on alone. `refresh` embeds and keeps the new
 * answer's vector but serves nothing.
 */
export async function semanticStep(
  deps: SemanticStepDeps,
  request: SemanticCallRequest,
  settings: SemanticProjectSettings,
  chat: ChatRequest,
  category: string | undefined,
  signal?: AbortSignal,
): Promise<SemanticStepOutcome | undefined> {
  if (!settings.semantic_enabled || request.mode === "bypass") return undefined;
  const embeddingModel = settings.semantic_embedding_model ?? deps.defaultModel;
  let found: CacheEntry | undefined;
  try {
    const probe = await deps.semantic.lookup(request.owner, chat, category, { threshold: settings.semantic_threshold, embeddingModel }, {
      signal,
      onUsage: (usage) => deps.bill(request, usage),
      entryExists: async (key) => {
        // `refresh` asks for a new answer: nothing is served.
        if (request.mode !== "use") return false;
        found = await deps.store.get(request.owner, key);
        return found !== undefined && found.answer.kind === "chat";
      },
    });
    if (!probe.eligible) return undefined;
    addHeaders(request, [[cacheEmbeddingModelHeader, probe.embeddingModel]]);
    if (probe.hit && found) return { entry: found, hit: probe.hit };
    return {
      entry: undefined,
      keep: (key, answer) => {
        deps.semantic.remember(probe, key, answer).catch((error: unknown) => deps.log.warn("semantic cache: storing a vector failed", { error: String(error) }));
      },
    };
  } catch (error) {
    if (signal?.aborted) throw error;
    deps.log.warn("semantic cache lookup failed; answered as a miss", { error: String(error), model: embeddingModel });
    return undefined;
  }
}

/** Says, in the answer's headers, that it is served by meaning: once the caller decided to serve it (a key's model allowlist may still refuse it). */
export function announceSemanticHit(request: SemanticCallRequest, hit: SemanticHit): void {
  addHeaders(request, [
    [cacheMatchHeader, "semantic"],
    [cacheSimilarityHeader, hit.similarity.toFixed(3)],
  ]);
}

/** Appends headers to the answer's head (a fresh array: the rate-limit headers' array may be shared). */
function addHeaders(request: SemanticCallRequest, added: [string, string][]): void {
  request.state.headers = [...(request.state.headers ?? []), ...added];
}
