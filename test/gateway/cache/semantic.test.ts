// The semantic cache's shared suite (semantic-suite.ts) on the embedded
// vector index, the backend of embedded mode.
import t from "tap";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EmbeddedVectorIndex } from "../../../vectors/embedded-vector-index.ts";
import { semanticCacheSuite } from "./semantic-suite.ts";

t.test("embedded index", async (t) =>
  semanticCacheSuite(t, {
    async openIndex(t, shape) {
      const directory = await mkdtemp(join(tmpdir(), "troupe-semantic-index-"));
      const index = new EmbeddedVectorIndex({ directory, ...shape, kernel: "js" });
      await index.open();
      t.teardown(async () => {
        await index.close();
        await rm(directory, { recursive: true, force: true });
      });
      return index;
    },
  }),
);
