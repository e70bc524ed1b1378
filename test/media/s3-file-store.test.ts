// The shared file store suite against a real MinIO (never a mock), plus what
// only this backend has: it creates its bucket, and createFileStore picks it
// when S3 settings are given.
import t from "tap";
import { randomUUID } from "node:crypto";
import { S3FileStore } from "../../media/s3-file-store.ts";
import { createFileStore } from "../../media/create-file-store.ts";
import { fileStoreSuite } from "./file-store-suite.ts";
import { testS3 } from "../support/minio.ts";
import { countS3Objects } from "../support/s3-objects.ts";

t.setTimeout(120_000);
// A fresh bucket per run: counts and listings see only this run's files.
const s3 = testS3(`troupe-test-${randomUUID().slice(0, 8)}`);
if (typeof s3 === "string") {
  t.plan(0, s3);
} else {
  t.teardown(() => s3.stop());
  const settings = s3.settings;
  fileStoreSuite(t, {
    open: () => S3FileStore.open(settings),
    count: () => countS3Objects(settings),
  });

  t.test("stores opened together on a new bucket all open (replicas starting at once race to create it)", async (t) => {
    const racing = { ...settings, bucket: `troupe-test-${randomUUID().slice(0, 8)}` };
    const stores = await Promise.all(Array.from({ length: 16 }, () => S3FileStore.open(racing)));
    t.teardown(() => Promise.all(stores.map((s) => s.close())));
    const file = await stores[0]!.put({ body: Buffer.from("raced"), contentType: "text/plain", organizationId: "o", environmentId: "env_test", scope: "images" });
    t.equal((await stores[15]!.head(file.id))?.size, 5);
  });

  t.test("createFileStore picks S3 when configured, creating the bucket", async (t) => {
    const store = await createFileStore({ s3: { ...settings, bucket: `troupe-test-${randomUUID().slice(0, 8)}` } }, "/nonexistent");
    t.teardown(() => store.close());
    t.ok(store instanceof S3FileStore);
    const file = await store.put({ body: Buffer.from("in a bucket"), contentType: "text/plain", organizationId: "o", environmentId: "env_test", scope: "images" });
    t.equal((await store.head(file.id))?.size, 11);
  });
}
