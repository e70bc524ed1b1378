// DELETE /v1/files/{id}: only the owning organization (its keys, its owners
// and admins) deletes; anyone else gets the 404 an unknown file gets; the URL
// is 404 afterwards and the bytes are gone from the data directory.
import t from "tap";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { field, signup, startTestTroupe, str, type TestTroupe } from "../../support/troupe.ts";

t.setTimeout(60_000);
const troupe = await startTestTroupe();
t.teardown(() => troupe.stop());

async function speech(troupe: TestTroupe, key: string): Promise<string> {
  const res = await troupe.request("POST", "/v1/audio/speech", { token: key, body: { text: "To be deleted.", voice: "soprano" } });
  if (res.status !== 200) throw new Error(`speech: ${res.status} ${res.text}`);
  return str(res.body, "audio").split("/").pop()!;
}

/** Every name under the data directory's file store (bytes and records). */
function storedNames(dataDir: string): string[] {
  const root = join(dataDir, "files");
  return readdirSync(root, { recursive: true, encoding: "utf8" });
}

const owner = await signup(troupe, "file-owner");
const stranger = await signup(troupe, "file-stranger");

t.test("another organization's key and session get 404, and the file stays", async (t) => {
  const id = await speech(troupe, owner.testKey);
  t.equal((await troupe.request("DELETE", `/v1/files/${id}`, { token: stranger.testKey })).status, 404);
  const bySession = await troupe.request("DELETE", `/v1/files/${id}`, { token: stranger.token, headers: { "x-csrf-token": stranger.csrf } });
  t.equal(bySession.status, 404, bySession.text);
  t.equal(field(bySession.body, "error", "code"), "not_found");
  t.equal((await fetch(`${troupe.url}/v1/files/${id}`)).status, 200);
  t.equal((await troupe.request("DELETE", `/v1/files/${id}`)).status, 401, "no credential");
});

t.test("the owning organization's key deletes: 404 afterwards, bytes gone from disk", async (t) => {
  const id = await speech(troupe, owner.testKey);
  t.ok(storedNames(troupe.dataDir).some((n) => n.includes(id)), "stored on disk first");
  const res = await troupe.request("DELETE", `/v1/files/${id}`, { token: owner.testKey });
  t.equal(res.status, 200, res.text);
  t.same(res.body, { id, deleted: true });
  t.equal((await fetch(`${troupe.url}/v1/files/${id}`)).status, 404);
  t.equal((await fetch(`${troupe.url}/v1/files/${id}`, { method: "HEAD" })).status, 404);
  t.same(storedNames(troupe.dataDir).filter((n) => n.includes(id)), [], "neither the bytes nor the record remain");
  t.equal((await troupe.request("DELETE", `/v1/files/${id}`, { token: owner.testKey })).status, 404, "a second delete finds nothing");
});

t.test("an owner's session deletes too; unknown and malformed ids are 404", async (t) => {
  const id = await speech(troupe, owner.testKey);
  const res = await troupe.request("DELETE", `/v1/files/${id}`, { token: owner.token, headers: { "x-csrf-token": owner.csrf } });
  t.equal(res.status, 200, res.text);
  t.equal((await fetch(`${troupe.url}/v1/files/${id}`)).status, 404);
  t.equal((await troupe.request("DELETE", "/v1/files/file_AAAAAAAAAAAAAAAAAAAAAA", { token: owner.testKey })).status, 404);
  t.equal((await troupe.request("DELETE", "/v1/files/..%2F..%2Fetc", { token: owner.testKey })).status, 404);
});
