// The semantic cache's shared suite (semantic-suite.ts) on a real
// Elasticsearch (ELASTICSEARCH_URL, e.g. from `npm run elasticsearch`), the
// backend of distributed mode: cache vectors in their own dense_vector index,
// cleared and erased there. Every add waits for a refresh (~1 s), hence the
// longer timeout.
import t from "tap";
import { randomUUID } from "node:crypto";
import { Client } from "@elastic/elasticsearch";
import { ElasticsearchVectorIndex } from "../../../vectors/elasticsearch-vector-index.ts";
import { semanticIndexName } from "../../../gateway/cache/semantic-index.ts";
import { semanticCacheSuite } from "./semantic-suite.ts";

t.setTimeout(300_000);

const url = process.env["ELASTICSEARCH_URL"];
if (!url) {
  // Never skipped: CI must run this against a real server.
  throw new Error("ELASTICSEARCH_URL is not set: start a server with `npm run elasticsearch` (scripts/elasticsearch.sh) and export the URL it prints");
}

const runPrefix = `troupe-test-semantic-${process.pid}-${randomUUID().slice(0, 8)}`;
const admin = new Client({ node: url, requestTimeout: 30_000 });
t.teardown(async () => {
  // Wildcard deletes are refused (action.destructive_requires_name): list, then delete by name.
  const created = Object.keys(await admin.indices.get({ index: `${runPrefix}-*`, allow_no_indices: true }));
  if (created.length > 0) await admin.indices.delete({ index: created });
  await admin.close();
});

let made = 0;
t.test("elasticsearch index", async (t) =>
  semanticCacheSuite(t, {
    async openIndex(t, shape) {
      // Named as the gateway names a model's cache index, beside a (test) ELASTICSEARCH_INDEX.
      const index = new ElasticsearchVectorIndex({ url, index: semanticIndexName(`${runPrefix}-${++made}`, shape.model), ...shape });
      await index.open();
      t.teardown(() => index.close());
      return index;
    },
  }),
);
