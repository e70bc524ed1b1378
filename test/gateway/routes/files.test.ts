// GET/HEAD /v1/files/{id} over real HTTP: no credentials needed, the right
// Content-Type and Content-Length, byte ranges (206, 416), ETag and 304, the
// immutable Cache-Control, 404 JSON for unknown ids, big files streamed
// whole, and files surviving a restart on the same data directory.
import t from "tap";
import { parseRange, etagMatches } from "../../../gateway/routes/files.ts";
import { startTestTroupe } from "../../support/troupe.ts";

t.test("parseRange", async (t) => {
  t.same(parseRange(undefined, 10), { kind: "whole" });
  t.same(parseRange("bytes=0-4", 10), { kind: "partial", range: { start: 0, end: 4 } });
  t.same(parseRange("bytes=5-", 10), { kind: "partial", range: { start: 5, end: 9 } });
  t.same(parseRange("bytes=-3", 10), { kind: "partial", range: { start: 7, end: 9 } });
  t.same(parseRange("bytes=-30", 10), { kind: "partial", range: { start: 0, end: 9 } });
  t.same(parseRange("bytes=2-100", 10), { kind: "partial", range: { start: 2, end: 9 } });
  t.same(parseRange("bytes=10-", 10), { kind: "unsatisfiable" });
  t.same(parseRange("bytes=-0", 10), { kind: "unsatisfiable" });
  t.same(parseRange("bytes=5-2", 10), { kind: "whole" }, "an invalid range is ignored");
  t.same(parseRange("bytes=0-1,3-4", 10), { kind: "whole" }, "several ranges: the whole file");
  t.same(parseRange("items=0-1", 10), { kind: "whole" });
  t.same(parseRange("bytes=-", 10), { kind: "whole" });
});

t.test("etagMatches", async (t) => {
  t.ok(etagMatches('"abc"', '"abc"'));
  t.ok(etagMatches('"x", W/"abc"', '"abc"'));
  t.ok(etagMatches("*", '"abc"'));
  t.notOk(etagMatches('"abd"', '"abc"'));
  t.notOk(etagMatches(undefined, '"abc"'));
});

t.test("serving files over HTTP", async (t) => {
  const troupe = await startTestTroupe();
  t.teardown(() => troupe.stop());
  const bytes = Buffer.from(Array.from({ length: 5000 }, (_, i) => i % 256));
  const file = await troupe.services.files.put({ body: bytes, contentType: "audio/wav", organizationId: "org_x", environmentId: "env_test", scope: "images" });
  const path = `/v1/files/${file.id}`;

  const whole = await fetch(troupe.url + path);
  t.equal(whole.status, 200);
  t.equal(whole.headers.get("content-type"), "audio/wav");
  t.equal(whole.headers.get("content-length"), "5000");
  t.equal(whole.headers.get("etag"), file.etag);
  t.match(whole.headers.get("cache-control"), /immutable/);
  t.match(whole.headers.get("cache-control"), /max-age=31536000/);
  t.equal(whole.headers.get("accept-ranges"), "bytes");
  t.equal(whole.headers.get("x-content-type-options"), "nosniff");
  t.same(Buffer.from(await whole.arrayBuffer()), bytes, "no credentials needed: the id is the capability");

  const part = await fetch(troupe.url + path, { headers: { range: "bytes=100-199" } });
  t.equal(part.status, 206);
  t.equal(part.headers.get("content-range"), "bytes 100-199/5000");
  t.equal(part.headers.get("content-length"), "100");
  t.same(Buffer.from(await part.arrayBuffer()), bytes.subarray(100, 200));

  const tail = await fetch(troupe.url + path, { headers: { range: "bytes=-10" } });
  t.equal(tail.status, 206);
  t.same(Buffer.from(await tail.arrayBuffer()), bytes.subarray(4990));

  const beyond = await fetch(troupe.url + path, { headers: { range: "bytes=6000-" } });
  t.equal(beyond.status, 416);
  t.equal(beyond.headers.get("content-range"), "bytes */5000");
  t.match(await beyond.json(), { error: { code: "invalid_request" } });

  const cached = await fetch(troupe.url + path, { headers: { "if-none-match": file.etag } });
  t.equal(cached.status, 304);
  t.equal(cached.headers.get("etag"), file.etag);
  t.equal((await cached.arrayBuffer()).byteLength, 0);

  const head = await fetch(troupe.url + path, { method: "HEAD" });
  t.equal(head.status, 200);
  t.equal(head.headers.get("content-length"), "5000");
  t.equal(head.headers.get("content-type"), "audio/wav");

  const missing = await fetch(troupe.url + "/v1/files/file_AAAAAAAAAAAAAAAAAAAAAA");
  t.equal(missing.status, 404);
  t.match(await missing.json(), { error: { code: "not_found" } });
  const garbage = await fetch(troupe.url + "/v1/files/..%2F..%2Fetc%2Fpasswd");
  t.equal(garbage.status, 404);

  const spec = (await (await fetch(troupe.url + "/v1/openapi.json")).json()) as { paths: Record<string, unknown> };
  t.ok(spec.paths["/v1/files/{id}"], "documented in the OpenAPI document");
});

t.test("X-Request-Id as on every route: a well-formed caller value echoed, anything else replaced by a generated id", async (t) => {
  const troupe = await startTestTroupe();
  t.teardown(() => troupe.stop());
  const file = await troupe.services.files.put({ body: Buffer.from("RIFF...."), contentType: "audio/wav", organizationId: "org_x", environmentId: "env_test", scope: "images" });
  for (const path of [`/v1/files/${file.id}`, "/v1/files/file_AAAAAAAAAAAAAAAAAAAAAA"]) {
    const echoed = await fetch(troupe.url + path, { headers: { "x-request-id": "caller.id-1" } });
    t.equal(echoed.headers.get("x-request-id"), "caller.id-1", `${path}: echoed`);
    await echoed.body?.cancel();
    const replaced = await fetch(troupe.url + path, { headers: { "x-request-id": "has spaces and ${}" } });
    t.match(replaced.headers.get("x-request-id"), /^req_[0-9a-f]{8}_[0-9a-z]+$/, `${path}: generated`);
    await replaced.body?.cancel();
  }
});

t.test("a large file streams whole (backpressure) and survives a restart", async (t) => {
  const first = await startTestTroupe();
  const big = Buffer.alloc(8 * 1024 * 1024);
  for (let i = 0; i < big.length; i += 4096) big[i] = (i / 4096) % 256;
  const file = await first.services.files.put({ body: big, contentType: "video/mp4", organizationId: "org_y", environmentId: "env_test", scope: "images" });
  const got = Buffer.from(await (await fetch(`${first.url}/v1/files/${file.id}`)).arrayBuffer());
  t.equal(got.length, big.length);
  t.ok(got.equals(big));
  await first.stop();
  const second = await startTestTroupe({ TROUPE_DATA_DIR: first.dataDir });
  t.teardown(() => second.stop());
  const again = await fetch(`${second.url}/v1/files/${file.id}`, { headers: { range: "bytes=4096-4096" } });
  t.equal(again.status, 206);
  t.same([...Buffer.from(await again.arrayBuffer())], [1]);
});

t.test("a client that reads slowly gets every byte in order (backpressure path)", async (t) => {
  const troupe = await startTestTroupe();
  t.teardown(() => troupe.stop());
  const big = Buffer.alloc(16 * 1024 * 1024);
  for (let i = 0; i < big.length; i += 4) big.writeUInt32LE(i, i);
  const file = await troupe.services.files.put({ body: big, contentType: "video/mp4", organizationId: "org_z", environmentId: "env_test", scope: "images" });
  const { connect } = await import("node:net");
  const received = await new Promise<Buffer>((resolve, reject) => {
    const socket = connect(troupe.port, "127.0.0.1");
    const chunks: Buffer[] = [];
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("end", () => resolve(Buffer.concat(chunks)));
    socket.on("error", reject);
    socket.write(`GET /v1/files/${file.id} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`);
    // Not reading for a while fills the socket buffers, so the server must wait for onWritable.
    socket.pause();
    setTimeout(() => socket.resume(), 800);
  });
  const headerEnd = received.indexOf("\r\n\r\n");
  t.match(received.subarray(0, headerEnd).toString(), /content-length: 16777216/i);
  const body = received.subarray(headerEnd + 4);
  t.equal(body.length, big.length);
  t.ok(body.equals(big), "the bytes arrive whole and in order");
});
