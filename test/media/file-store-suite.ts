// The one suite every FileStore backend runs (data directory, S3/MinIO):
// round trip with content type, size, ETag and organization; streamed puts;
// ranges; unknown and malformed ids; delete; the size cap leaving nothing
// behind; ids that are 128-bit capabilities; a second store over the same
// location (a restart, another replica) seeing the same files.
import type { Test } from "tap";
import { createHash } from "node:crypto";
import { FileTooLargeError, type FileStore } from "../../media/file-store.ts";

export interface FileStoreHarness {
  /** A store over the shared location (call twice: a restart or a second replica). */
  open(): Promise<FileStore>;
  /** Files visible in the location, for "nothing half-stored" checks. */
  count(): Promise<number>;
}

async function readAll(body: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(c);
  return Buffer.concat(chunks);
}

async function* slowChunks(parts: Buffer[]): AsyncIterable<Buffer> {
  for (const p of parts) {
    await new Promise((r) => setImmediate(r));
    yield p;
  }
}

export function fileStoreSuite(t: Test, harness: FileStoreHarness): void {
  t.test("put then head and get return the bytes and the record", async (t) => {
    const store = await harness.open();
    t.teardown(() => store.close());
    const bytes = Buffer.from("RIFF....WAVEfmt hello world");
    const file = await store.put({ body: bytes, contentType: "audio/wav", organizationId: "org_a", environmentId: "env_test", scope: "images" });
    t.match(file.id, /^file_[A-Za-z0-9_-]{22}$/);
    t.equal(Buffer.from(file.id.slice(5), "base64url").length, 16, "128 random bits");
    t.equal(file.size, bytes.length);
    t.equal(file.content_type, "audio/wav");
    t.equal(file.organization_id, "org_a");
    t.equal(file.etag, `"${createHash("sha256").update(bytes).digest("hex")}"`);
    const head = await store.head(file.id);
    t.same(head, file, "head reads back the same record");
    const got = await store.get(file.id);
    t.ok(got);
    t.same(got!.file, file);
    t.same(await readAll(got!.body), bytes);
  });

  t.test("a streamed body is stored whole", async (t) => {
    const store = await harness.open();
    t.teardown(() => store.close());
    const parts = Array.from({ length: 50 }, (_, i) => Buffer.alloc(10_000, i));
    const file = await store.put({ body: slowChunks(parts), contentType: "image/png", organizationId: "org_b", environmentId: "env_test", scope: "images" });
    t.equal(file.size, 500_000);
    const got = await store.get(file.id);
    t.same(await readAll(got!.body), Buffer.concat(parts));
  });

  t.test("a range returns exactly those bytes", async (t) => {
    const store = await harness.open();
    t.teardown(() => store.close());
    const bytes = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 251));
    const file = await store.put({ body: bytes, contentType: "application/octet-stream", organizationId: "org_a", environmentId: "env_test", scope: "images" });
    const got = await store.get(file.id, { start: 100, end: 199 });
    t.same(await readAll(got!.body), bytes.subarray(100, 200));
    t.equal(got!.file.size, 1000, "the record keeps the whole size");
    const last = await store.get(file.id, { start: 999, end: 999 });
    t.same(await readAll(last!.body), bytes.subarray(999));
  });

  t.test("unknown and malformed ids are absent", async (t) => {
    const store = await harness.open();
    t.teardown(() => store.close());
    t.equal(await store.head("file_AAAAAAAAAAAAAAAAAAAAAA"), undefined);
    t.equal(await store.get("file_AAAAAAAAAAAAAAAAAAAAAA"), undefined);
    t.equal(await store.head("../../etc/passwd"), undefined);
    t.equal(await store.get("file_../../x"), undefined);
    t.equal(await store.delete("file_AAAAAAAAAAAAAAAAAAAAAA"), false);
  });

  t.test("delete removes the file", async (t) => {
    const store = await harness.open();
    t.teardown(() => store.close());
    const file = await store.put({ body: Buffer.from("x"), contentType: "text/plain", organizationId: "org_a", environmentId: "env_test", scope: "images" });
    t.equal(await store.delete(file.id), true);
    t.equal(await store.head(file.id), undefined);
    t.equal(await store.get(file.id), undefined);
    t.equal(await store.delete(file.id), false, "a second delete finds nothing");
  });

  t.test("a body over the cap is refused and nothing is stored", async (t) => {
    const store = await harness.open();
    t.teardown(() => store.close());
    const before = await harness.count();
    const parts = Array.from({ length: 10 }, () => Buffer.alloc(1000, 7));
    await t.rejects(store.put({ body: slowChunks(parts), contentType: "image/png", organizationId: "org_a", environmentId: "env_test", scope: "images", maxBytes: 4500 }), FileTooLargeError);
    t.equal(await harness.count(), before, "no file appeared");
  });

  t.test("ids differ on every put", async (t) => {
    const store = await harness.open();
    t.teardown(() => store.close());
    const ids = new Set<string>();
    await Promise.all(
      Array.from({ length: 20 }, async () => ids.add((await store.put({ body: Buffer.from("same"), contentType: "text/plain", organizationId: "o", environmentId: "env_test", scope: "images" })).id)),
    );
    t.equal(ids.size, 20);
  });

  t.test("another store over the same location serves the files (restart, other replica)", async (t) => {
    const first = await harness.open();
    const file = await first.put({ body: Buffer.from("durable"), contentType: "text/plain", organizationId: "org_c", environmentId: "env_test", scope: "images" });
    await first.close();
    const second = await harness.open();
    t.teardown(() => second.close());
    const got = await second.get(file.id);
    t.same(got!.file, file);
    t.equal((await readAll(got!.body)).toString(), "durable");
  });
}
