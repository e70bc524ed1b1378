// Where the semantic cache keeps its vectors: a vector index of its own per
// embedding model, on the organization index's backend (Elasticsearch
// `dense_vector` in distributed mode, the embedded index otherwise) but never
// in the index behind /v1/vector-index: a user's searches never meet cache
// vectors, and cache vectors never count against the user's record quota.
// One index per model because an index holds one embedding space (mixing two
// would rank nonsense); a project that changes its model starts a new index
// and its old vectors stay deletable (the registry in semantic.ts).
import { join } from "node:path";
import type { Config } from "../../core/config.ts";
import type { Logger } from "../../core/log.ts";
import type { Router } from "../../providers/router.ts";
import { createVectorIndex } from "../../vectors/create-vector-index.ts";
import type { VectorIndex } from "../../vectors/vector-index.ts";
import type { SemanticEmbedder, SemanticIndexOpener } from "./semantic.ts";

/** A model id as a directory or index-name part (Elasticsearch index names are lower case, no `/`, `:` or `*`). */
export function modelSlug(model: string): string {
  return model.toLowerCase().replace(/[^a-z0-9._-]+/g, "-");
}

/** The Elasticsearch index of a model's cache vectors, beside ELASTICSEARCH_INDEX. */
export function semanticIndexName(base: string, model: string): string {
  return `${base}-semantic-cache-${modelSlug(model)}`;
}

/**
 * Opens (once per model, on first use) the cache's index for an embedding
 * model of the catalogue; a model that is not an embedding model with known
 * dimensions is refused with an error naming it.
 */
export function semanticIndexOpener(config: Config, router: Router, log: Logger): SemanticIndexOpener & { closeAll(): Promise<void> } {
  const opened = new Map<string, Promise<VectorIndex>>();
  const open = async (model: string): Promise<VectorIndex> => {
    const entry = router.catalogue.get(model);
    const dimensions = entry?.capabilities.dimensions;
    if (!entry || entry.category !== "embedding" || !dimensions) throw new Error(`the semantic cache's embedding model ${model} is not an embedding model with known dimensions in the catalogue`);
    const index = await createVectorIndex(
      { ...config.vectors, indexModel: model, elasticsearchIndex: semanticIndexName(config.vectors.elasticsearchIndex, model) },
      { dataDir: join(config.dataDir, "semantic-cache", modelSlug(model)), dimensions, logger: log },
    );
    await index.open();
    return index;
  };
  const opener = (model: string): Promise<VectorIndex> => {
    let index = opened.get(model);
    if (!index) {
      index = open(model);
      // A failed open is tried again next time, not remembered.
      index.catch(() => opened.delete(model));
      opened.set(model, index);
    }
    return index;
  };
  return Object.assign(opener, {
    closeAll: async () => {
      const indexes = await Promise.allSettled([...opened.values()]);
      opened.clear();
      await Promise.all(indexes.map((r) => (r.status === "fulfilled" ? r.value.close() : undefined)));
    },
  });
}

/** Embeds with the named model exactly (routing manual): the model named in the answer's troupe-cache-embedding-model header. */
export function routerSemanticEmbedder(router: Router): SemanticEmbedder {
  return async (model, text, signal) => {
    const result = await router.embed({ model, routing_strategy: "manual", input: [text], input_type: "search_query" }, { signal });
    const vector = result.embeddings[0];
    if (!vector) throw new Error(`the embedding model ${model} returned no vector`);
    return { vector, usage: { model: result.model, provider: result.provider, input_tokens: result.input_tokens } };
  };
}
