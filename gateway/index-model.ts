// Which embedding model the organization vector index (POST
// /v1/embeddings/index, /search, the agents' memory) is built with
// (docs/api/embeddings-and-vector-index.md). EMBEDDING_INDEX_MODEL, when set,
// names it. Unset, an index is built, the first time it is created, with the
// first model of `indexModelPreference` whose provider is configured — the
// simulated bag-of-words model only when no real provider is — and an
// existing index keeps the model it was built with, whatever is configured
// since: every vector of an index has one dimension, and vectors of two
// embedding spaces cannot be ranked together.
import type { Clock } from "../core/clock.ts";
import type { Config } from "../core/config.ts";
import type { Logger } from "../core/log.ts";
import type { ModelEntry } from "../providers/catalogue.ts";
import type { Router } from "../providers/router.ts";
import { createVectorIndex } from "../vectors/create-vector-index.ts";
import { OrgIndex, type Embedder } from "../vectors/org-index.ts";
import type { VectorIndex } from "../vectors/vector-index.ts";

/**
 * Best first: OpenAI's text-embedding-3-small (1,536 dimensions, multilingual,
 * the cheapest real model), Cohere's embed-v4.0 (1,536, multilingual), then
 * the larger or older ones; the simulated model last.
 */
export const indexModelPreference = ["text-embedding-3-small", "embed-v4.0", "text-embedding-3-large", "embed-english-v3.0", "simulated-embed"] as const;

/** The catalogue entry of an index model, or the start-up error naming it. */
function indexEntry(router: Router, id: string, why: string): ModelEntry & { dimensions: number } {
  const entry = router.catalogue.get(id);
  const dimensions = entry?.capabilities.dimensions;
  if (!entry || entry.category !== "embedding" || !dimensions) throw new Error(`${why} ${id} is not an embedding model with known dimensions in the catalogue`);
  return { ...entry, dimensions };
}

/** The first model of the preference order whose provider is configured. */
export function preferredIndexModel(router: Router): string {
  return indexModelPreference.find((id) => {
    const entry = router.catalogue.get(id);
    return entry !== undefined && router.isAvailable(entry.provider);
  }) ?? "simulated-embed";
}

/** Creates (or loads) the vector index with its model, open. */
export async function openVectorIndex(config: Config, router: Router, log: Logger): Promise<VectorIndex> {
  const explicit = config.vectors.indexModel;
  let entry = indexEntry(router, explicit ?? preferredIndexModel(router), explicit ? "EMBEDDING_INDEX_MODEL" : "the preferred index model");
  const open = (model: string, dimensions: number) => createVectorIndex({ ...config.vectors, indexModel: model }, { dataDir: config.dataDir, dimensions, logger: log });
  let index = await open(entry.id, entry.dimensions);
  if (!explicit) {
    // An index built before keeps its model (a provider configured since does not change it).
    const stored = await index.storedMeta();
    if (stored && stored.model !== entry.id) {
      entry = indexEntry(router, stored.model, "the existing vector index's model");
      index = await open(entry.id, entry.dimensions);
    }
  }
  await index.open();
  log.info("vector index model", { model: entry.id, provider: entry.provider, dimensions: entry.dimensions, chosen: explicit ? "EMBEDDING_INDEX_MODEL" : "preference order" });
  return index;
}

/** The index and the organization-scoped view on it, embedding with the index's model (routing manual). */
export async function openOrgIndex(config: Config, router: Router, log: Logger, clock: Clock): Promise<{ vectors: VectorIndex; orgIndex: OrgIndex }> {
  const vectors = await openVectorIndex(config, router, log);
  const embed: Embedder = async (texts, purpose, signal, onUsage) => {
    const result = await router.embed(
      { model: vectors.model, routing_strategy: "manual", input: texts, input_type: purpose === "query" ? "search_query" : "search_document" },
      { signal },
    );
    onUsage?.(result);
    return result.embeddings;
  };
  return { vectors, orgIndex: new OrgIndex({ index: vectors, embed, clock }) };
}
