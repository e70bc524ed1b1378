// The shared file store suite on the data-directory backend, plus what only
// it has: temporaries swept at open, and no temporary left after a failed put.
import t from "tap";
import { mkdtempSync, writeFileSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalFileStore } from "../../media/local-file-store.ts";
import { createFileStore } from "../../media/create-file-store.ts";
import { fileStoreSuite } from "./file-store-suite.ts";

const root = mkdtempSync(join(tmpdir(), "troupe-files-"));
fileStoreSuite(t, {
  open: () => LocalFileStore.open(root),
  count: async () => (await (await LocalFileStore.open(root)).list()).length,
});

t.test("a failed put leaves no temporary behind", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-files-"));
  const store = await LocalFileStore.open(dir);
  async function* failing(): AsyncIterable<Buffer> {
    yield Buffer.from("partial");
    throw new Error("upstream cut");
  }
  await t.rejects(store.put({ body: failing(), contentType: "image/png", organizationId: "o", environmentId: "env_test", scope: "images" }), /upstream cut/);
  t.equal(await store.pendingTemporaries(), 0);
  t.same(await store.list(), []);
});

t.test("leftover temporaries of a crash are swept at open", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-files-"));
  await LocalFileStore.open(dir);
  writeFileSync(join(dir, ".tmp", "123-1-file_x.data"), "half");
  const store = await LocalFileStore.open(dir);
  t.equal(await store.pendingTemporaries(), 0);
  t.same(readdirSync(join(dir, ".tmp")), []);
});

t.test("createFileStore picks the data directory without S3 settings", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-files-"));
  const store = await createFileStore({ s3: undefined }, dir);
  t.ok(store instanceof LocalFileStore);
  const file = await store.put({ body: Buffer.from("a"), contentType: "text/plain", organizationId: "o", environmentId: "env_test", scope: "images" });
  t.ok(readdirSync(join(dir, "files", file.id.slice(5, 7))).includes(file.id));
});
