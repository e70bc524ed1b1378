// The organization-scoped vector index (Elasticsearch dense_vector in the
// distributed mode, embedded otherwise): the index routes, and the memory
// agent conversations search.
import type { OrgIndex } from "../../vectors/org-index.ts";
import { openOrgIndex } from "../index-model.ts";
import type { VectorIndex } from "../../vectors/vector-index.ts";
import { vectorIndexRoutes } from "../routes/vector-index.ts";
import type { BillingFeature } from "./billing.ts";
import type { Feature } from "./feature.ts";
import type { SharedServices } from "./shared-services.ts";

export interface VectorsFeature extends Feature {
  orgIndex: OrgIndex;
  vectors: VectorIndex;
}

export async function vectorsFeature(s: SharedServices, billing: BillingFeature): Promise<VectorsFeature> {
  // The index's embedding model: EMBEDDING_INDEX_MODEL, else the best configured one, kept once chosen (index-model.ts).
  const { vectors, orgIndex } = await openOrgIndex(s.config, s.router, s.log, s.clock);
  return {
    orgIndex,
    vectors,
    routes: vectorIndexRoutes({ index: orgIndex, catalogue: s.router.catalogue, usage: billing.meter, billing: billing.billing }),
    stop: () => vectors.close(),
  };
}
