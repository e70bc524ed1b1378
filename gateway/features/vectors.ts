// The organization-scoped vector index (Elasticsearch dense_vector in the
// distributed mode, embedded otherwise): the index routes, and the memory
// agent conversations search.
import type { UsageMeter } from "../../providers/usage.ts";
import { createVectorIndex } from "../../vectors/create-vector-index.ts";
import { OrgIndex, type Embedder } from "../../vectors/org-index.ts";
import type { VectorIndex } from "../../vectors/vector-index.ts";
import { vectorIndexRoutes } from "../routes/vector-index.ts";
import type { Feature } from "./feature.ts";
import type { SharedServices } from "./shared-services.ts";

export interface VectorsFeature extends Feature {
  orgIndex: OrgIndex;
  vectors: VectorIndex;
}

export async function vectorsFeature(s: SharedServices, meter: UsageMeter): Promise<VectorsFeature> {
  const { config, router } = s;
  const indexModel = router.catalogue.get(config.vectors.indexModel);
  const dimensions = indexModel?.capabilities.dimensions;
  if (!indexModel || indexModel.category !== "embedding" || !dimensions) {
    throw new Error(`EMBEDDING_INDEX_MODEL ${config.vectors.indexModel} is not an embedding model with known dimensions in the catalogue`);
  }
  const vectors = await createVectorIndex(config.vectors, { dataDir: config.dataDir, dimensions, logger: s.log });
  await vectors.open();
  const embed: Embedder = async (texts, purpose, signal, onUsage) => {
    const result = await router.embed(
      { model: config.vectors.indexModel, routing_strategy: "manual", input: texts, input_type: purpose === "query" ? "search_query" : "search_document" },
      { signal },
    );
    onUsage?.(result);
    return result.embeddings;
  };
  const orgIndex = new OrgIndex(vectors, embed, s.clock);
  return {
    orgIndex,
    vectors,
    routes: vectorIndexRoutes({ index: orgIndex, usage: meter }),
    stop: () => vectors.close(),
  };
}
