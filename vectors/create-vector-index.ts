// Chooses the vector index backend from configuration: Elasticsearch when
// ELASTICSEARCH_URL is set, else the embedded index under the data directory.
// The returned index is not open yet: the caller awaits open() at start-up,
// which is where a model/dimension mismatch is refused. Each backend is
// imported only when chosen: the Elasticsearch client alone costs the
// embedded start hundreds of milliseconds (bench/startup.ts).
import { join } from "node:path";
import type { VectorsConfig } from "../core/config.ts";
import type { Logger } from "../core/log.ts";
import type { VectorIndex, VectorIndexOptions } from "./vector-index.ts";

export interface VectorIndexDeps {
  /** TROUPE_DATA_DIR; the embedded index lives in <dataDir>/vectors. */
  dataDir: string;
  /** Output dimension of the configured EMBEDDING_INDEX_MODEL (from the model catalogue). */
  dimensions: number;
  logger?: Logger;
}

/** `indexModel`: the model the index is built with (gateway/index-model.ts resolves it when unset). */
export async function createVectorIndex(
  config: Omit<VectorsConfig, "indexModel" | "hnsw" | "elasticsearchHnsw" | "elasticsearchNumCandidates" | "elasticsearchPreloadVectors"> &
    { indexModel: string } & Partial<Pick<VectorsConfig, "hnsw" | "elasticsearchHnsw" | "elasticsearchNumCandidates" | "elasticsearchPreloadVectors">>,
  deps: VectorIndexDeps,
): Promise<VectorIndex> {
  const logger = deps.logger?.child({ component: "vectors" });
  const options: VectorIndexOptions = { model: config.indexModel, dimensions: deps.dimensions, limits: config.limits, ...(logger ? { logger } : {}) };
  if (config.elasticsearchUrl) {
    const { ElasticsearchVectorIndex, numCandidatesFrom } = await import("./elasticsearch-vector-index.ts");
    return new ElasticsearchVectorIndex({
      ...options,
      url: config.elasticsearchUrl,
      index: config.elasticsearchIndex,
      ...(config.elasticsearchHnsw ? { hnsw: config.elasticsearchHnsw } : {}),
      ...(config.elasticsearchNumCandidates !== undefined ? { numCandidates: numCandidatesFrom(config.elasticsearchNumCandidates) } : {}),
      ...(config.elasticsearchPreloadVectors !== undefined ? { preloadVectors: config.elasticsearchPreloadVectors } : {}),
    });
  }
  const { EmbeddedVectorIndex } = await import("./embedded-vector-index.ts");
  return new EmbeddedVectorIndex({
    ...options,
    directory: join(deps.dataDir, "vectors"),
    graph: config.hnsw ?? {},
  });
}
