// A cluster test's own vector index on an inherited ELASTICSEARCH_URL (CI's):
// replicas that inherit it otherwise share the default index, which keeps the
// embedding model the first cluster to create it chose (gateway/index-model.ts).
// A cluster with the OpenAI fake configured built it with text-embedding-3-small,
// and a later cluster without OpenAI then failed every embedding (its agents'
// memory, /v1/embeddings/index) with 400 "provider openai is not configured".

/** `env` for the cluster's appEnv; `drop` deletes the index at teardown (a no-op without Elasticsearch). */
export function ownVectorIndex(label: string): { env: { ELASTICSEARCH_INDEX: string }; drop(): Promise<void> } {
  const name = `troupe-${label}-${process.pid}-${Date.now()}`;
  return {
    env: { ELASTICSEARCH_INDEX: name },
    async drop() {
      const url = process.env["ELASTICSEARCH_URL"];
      if (url) await fetch(`${url}/${name}`, { method: "DELETE" }).catch(() => undefined);
    },
  };
}
