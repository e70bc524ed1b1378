// What an organization's deletion leaves in the bytes of the lmdb files, and
// `npm run backup -- --compact` taking it away. lmdb does not zero a freed
// page: after the deletion, the organization's content can still be read in
// the raw files (not through any lmdb read) until its pages are reused. A
// compacted backup copies only the pages still in use, so the copy, raw
// bytes included, holds none of it, and it restores and serves.
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import t from "tap";
import { isLmdbFile } from "../../scripts/backup-layout.ts";
import { populate } from "../support/org-footprint.ts";
import { field, signup, startTestTroupe, type TestTroupe } from "../support/troupe.ts";

const run = promisify(execFile);
const scripts = join(import.meta.dirname, "../../scripts");

function backup(dataDir: string, into: string, ...flags: string[]) {
  return run(process.execPath, [join(scripts, "backup.ts"), ...flags, into], { env: { ...process.env, TROUPE_DATA_DIR: dataDir, TROUPE_MODE: "embedded" } });
}

/** The lmdb files under `dir` whose raw bytes contain `needle`. */
function rawHits(dir: string, needle: string): string[] {
  const bytes = Buffer.from(needle);
  const hits: string[] = [];
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (isLmdbFile(path) && readFileSync(path).includes(bytes)) hits.push(path.slice(dir.length + 1));
    }
  };
  walk(dir);
  return hits.sort();
}

t.test("deleted content lingers in the raw lmdb files; a compacted backup of them holds none of it", async (t) => {
  t.setTimeout(120_000);
  const troupe = await startTestTroupe({ OUTBOUND_ALLOW_HOSTS: "127.0.0.1" });
  let restored: TestTroupe | undefined;
  let stopped = false;
  t.teardown(async () => {
    if (!stopped) await troupe.stop();
    await restored?.stop();
  });
  const doomed = await signup(troupe, "compact-doomed");
  const kept = await signup(troupe, "compact-kept");
  const marker = `MARK${randomUUID().replaceAll("-", "")}`;
  const keptMarker = `MARK${randomUUID().replaceAll("-", "")}`;
  await populate(troupe.request, doomed, marker);
  await populate(troupe.request, kept, keptMarker);
  const orgName = String(field((await troupe.request("GET", `/v1/orgs/${doomed.orgId}`, { token: doomed.token })).body, "name"));
  const deleted = await troupe.request("DELETE", `/v1/orgs/${doomed.orgId}`, { token: doomed.token, body: { confirm: orgName } });
  t.equal(deleted.status, 200, deleted.text);

  const plainCopy = join(mkdtempSync(join(tmpdir(), "troupe-plain-")), "copy");
  await backup(troupe.dataDir, plainCopy);
  const compactCopy = join(mkdtempSync(join(tmpdir(), "troupe-compact-")), "copy");
  const compacted = await backup(troupe.dataDir, compactCopy, "--compact");
  t.match(compacted.stdout, /^compacted backup of /m, "the backup says it compacted");
  t.equal(JSON.parse(readFileSync(join(compactCopy, "troupe-backup.json"), "utf8")).compacted, true, "and its manifest records it");
  await t.rejects(backup(troupe.dataDir, join(tmpdir(), `troupe-never-${randomUUID()}`), "--compcat"), "a misspelt flag is refused, not taken for a directory");
  await troupe.stop();
  stopped = true;

  const lingering = rawHits(troupe.dataDir, marker);
  t.ok(lingering.length > 0, `the deleted organization's content is still in the raw bytes of ${lingering.join(", ")} (lmdb's freed pages)`);
  t.same(rawHits(plainCopy, marker), lingering, "a plain backup copies the freed pages as they are");
  t.same(rawHits(compactCopy, marker), [], "a compacted backup holds none of it");
  t.ok(rawHits(compactCopy, keptMarker).length > 0, "and still holds the organization that was kept");

  const restoredDir = join(mkdtempSync(join(tmpdir(), "troupe-compact-restored-")), "data");
  await run(process.execPath, [join(scripts, "restore.ts"), compactCopy], { env: { ...process.env, TROUPE_DATA_DIR: restoredDir, TROUPE_MODE: "embedded" } });
  restored = await startTestTroupe({ TROUPE_DATA_DIR: restoredDir });
  t.equal((await restored.request("GET", "/v1/models", { token: kept.testKey })).status, 200, "the restored copy serves the kept organization's key");
  t.equal((await restored.request("GET", "/v1/models", { token: doomed.testKey })).status, 401, "and not the deleted one's");
});
