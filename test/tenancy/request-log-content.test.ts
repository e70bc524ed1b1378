// Content in the request log's store, with an injected clock: an entry
// written before content existed (version 1) still reads, one with content
// (version 2) reads back whole, a page never carries content, the sweep
// removes expired content from the file while the entry stays, and an
// organization's erasure leaves none of its content on disk.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { boundedText, entryContentOf } from "../../tenancy/request-log-content.ts";
import { entryFromStored, storedEntry, type RequestLogEntry } from "../../tenancy/request-log-entry.ts";
import { RequestLogStore } from "../../tenancy/request-log-store.ts";
import { scanLmdb } from "../support/org-footprint.ts";
import { logEntry } from "../support/request-log-entry.ts";

const hour = 3_600_000;
const start = Date.UTC(2030, 0, 10, 12, 0, 0);

function entry(n: number, createdMs: number, over: Partial<RequestLogEntry> = {}): RequestLogEntry {
  return logEntry(`req_${n}`, createdMs, { latency_ms: 12.5, ...over });
}

const withContent = (n: number, createdMs: number, expiresMs: number, project = "prj_a") =>
  entry(n, createdMs, { project_id: project, content: entryContentOf({ messages: [{ role: "user", content: `secret prompt ${n}` }] }, { content: `secret answer ${n}` }, expiresMs) });

t.test("stored formats: version 1 still reads, version 2 round-trips, an entry without content stays version 1", async (t) => {
  const plain = entry(1, start);
  const v1 = storedEntry(plain);
  t.equal(v1[0], 1, "no content: version 1");
  t.equal(v1.length, 21);
  // An array as the release before content wrote it.
  const old = [1, start, "org_a", "env_a", "key_a", true, "POST", "/v1/chat/completions", "gpt-4.1-mini", "openai", null, 200, null, 12.5, 2, 10, 5, 0, 1000, null, null];
  t.same(entryFromStored("prj_a", "req_1", old), plain, "an old entry decodes as before");
  const rich = withContent(2, start, start + hour);
  const v2 = storedEntry(rich);
  t.equal(v2[0], 2);
  t.same(entryFromStored("prj_a", "req_2", v2), rich, "content reads back whole");
  t.equal(entryFromStored("prj_a", "req_2", [2, ...v1.slice(1)]), undefined, "a version 2 without its content is not misread");
  t.same(boundedText("abc", 2), { text: "ab\n[truncated: 3 bytes in the original, 2 kept]", original_bytes: 3, truncated: true });
});

t.test("expired content leaves the entry and the file; the metadata stays", async (t) => {
  let now = start;
  const dir = mkdtempSync(join(tmpdir(), "reqlog-content-"));
  const store = new RequestLogStore(dir, { now: () => now }, { retentionMs: 24 * hour, maxEntries: 1_000_000 });
  t.teardown(() => store.close());
  await store.append([withContent(1, now, now + hour), withContent(2, now, now + 3 * hour), entry(3, now)]);
  t.equal(store.get("prj_a", "req_1")?.content?.answer?.text, "secret answer 1");
  t.ok(store.page("prj_a", {}, 10).entries.every((e) => e.content === undefined), "a page carries no content");
  t.equal(store.page("prj_a", {}, 10).entries.length, 3);

  now += 2 * hour;
  t.equal(store.get("prj_a", "req_1")?.content, undefined, "past its expiry a read shows none, before any sweep");
  t.ok(store.get("prj_a", "req_2")?.content, "the other's is not expired yet");
  t.equal(await store.sweepContent(), 1, "one entry rewritten");
  const onDisk = scanLmdb(dir, ["secret prompt 1", "secret answer 1"]);
  t.same(onDisk, [], "the expired content is off the file");
  t.ok(scanLmdb(dir, ["secret answer 2"]).length > 0, "the unexpired one is still there");
  t.match(store.get("prj_a", "req_1"), { request_id: "req_1", status: 200, input_tokens: 10 }, "the metadata stays");

  // The next write after a minute sweeps by itself.
  now += 2 * hour;
  await store.append([entry(4, now)]);
  t.same(scanLmdb(dir, ["secret"]), [], "swept by the write");
  t.equal(store.size().entries, 4, "no entry removed");
});

t.test("an organization's erasure removes its content and its expiry rows", async (t) => {
  const now = start;
  const dir = mkdtempSync(join(tmpdir(), "reqlog-content-erase-"));
  const store = new RequestLogStore(dir, { now: () => now }, { retentionMs: 24 * hour, maxEntries: 1_000_000 });
  t.teardown(() => store.close());
  await store.append([withContent(1, now, now + hour), withContent(2, now, now + hour, "prj_b")]);
  t.equal(await store.eraseOrganization("org_a", ["prj_a"]), 1);
  t.same(scanLmdb(dir, ["secret prompt 1", "secret answer 1", "prj_a"]), [], "nothing of the project on disk, its expiry row included");
  t.ok(scanLmdb(dir, ["secret answer 2"]).length > 0, "the other project's content stays");
  t.equal(await store.sweepContent(now + 2 * hour), 1, "the other project's expiry row is still there and sweeps");
});

t.test("a socket's figures are kept when its content expires", async (t) => {
  let now = start;
  const dir = mkdtempSync(join(tmpdir(), "reqlog-content-socket-"));
  const store = new RequestLogStore(dir, { now: () => now }, { retentionMs: 24 * hour, maxEntries: 1_000_000 });
  t.teardown(() => store.close());
  const websocket = { close_code: 1000, bytes_in: 12, bytes_out: 3400 };
  const socketEntry = { ...withContent(1, now, now + hour), route: "/v1/realtime", status: 101, websocket };
  t.same(entryFromStored("prj_a", "req_1", storedEntry(socketEntry)), socketEntry, "figures and content round-trip");
  await store.append([socketEntry, entry(2, now, { websocket })]);
  now += 2 * hour;
  t.equal(await store.sweepContent(), 1);
  t.same(store.get("prj_a", "req_1")?.websocket, websocket, "the figures stay");
  t.equal(store.get("prj_a", "req_1")?.content, undefined);
  t.same(store.get("prj_a", "req_2")?.websocket, websocket, "a socket without content");
});
