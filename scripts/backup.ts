// `npm run backup -- <dir>`: a consistent copy of an embedded Troupe's data
// directory (TROUPE_DATA_DIR) while it serves. Each lmdb environment
// (accounts and keys, actor state and reminders, the ledger, the vector
// index) is copied by lmdb's own backup, inside one read transaction, so
// each copy is that store exactly as of one commit; the stores are copied
// one after another, then the media files. Every write acknowledged before
// the backup began is in the copy (a file is stored before the record that
// names it, so copying files last never leaves a record without its file).
// Writes during the backup may or may not be in it. Usage records reach the
// ledger within the usage recorder's flush (at most 200 ms after the
// answer), so a call answered in that window may be missing from the copy.
// `--compact` copies each lmdb store without its free pages (lmdb's
// compacting copy, `mdb_copy -c`): lmdb does not zero a freed page, so
// bytes an erasure removed (an organization's deletion, an expired record)
// can linger in the live files until the page is reused; a compacted copy
// holds only what is still stored, and restoring it is how an operator
// makes deleted content gone from disk (docs/operations/backup-and-restore.md).
// The distributed mode's stores (Redis, Elasticsearch, S3) have their own
// procedures: docs/operations/backup-and-restore.md.
import { copyFile, mkdir, readdir, stat, writeFile } from "node:fs/promises";
import { join, relative, resolve } from "node:path";
import { open } from "lmdb";
import { loadConfig } from "../gateway/config.ts";
import { backupManifestName, isLmdbFile, isSkipped, type BackupManifest } from "./backup-layout.ts";

function fail(message: string): never {
  process.stderr.write(`backup: ${message}\n`);
  process.exit(1);
}

/** Every file under `dir`, as paths relative to `root`. */
async function walk(root: string, dir = root): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await walk(root, path)));
    else if (entry.isFile()) out.push(relative(root, path));
  }
  return out;
}

async function emptyOrAbsent(dir: string): Promise<boolean> {
  try {
    return (await readdir(dir)).length === 0;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return true;
    throw error;
  }
}

const args = process.argv.slice(2);
const target = args.find((a) => !a.startsWith("--"));
const unknownFlags = args.filter((a) => a.startsWith("--") && a !== "--compact");
if (target === undefined || unknownFlags.length > 0) fail("usage: npm run backup -- [--compact] <directory for the copy>");
const compact = args.includes("--compact");
const config = loadConfig();
if (config.mode !== "embedded") fail("TROUPE_MODE=dapr keeps its data in Redis, Elasticsearch and S3: see docs/operations/backup-and-restore.md");
const source = resolve(config.dataDir);
const destination = resolve(target);
if (!(await stat(source).catch(() => undefined))?.isDirectory()) fail(`${source} (TROUPE_DATA_DIR) is not a directory`);
if (!(await emptyOrAbsent(destination))) fail(`${destination} is not empty: a backup goes into a new or empty directory`);
await mkdir(destination, { recursive: true, mode: 0o700 });

const startedAt = new Date().toISOString();
const files = (await walk(source)).filter((path) => !isSkipped(path)).sort();
const manifest: BackupManifest = { format: 1, started_at: startedAt, finished_at: "", source, compacted: compact, stores: [], files: 0, bytes: 0 };

// The lmdb environments first: a record in them names only files that
// already exist, and the files are copied after.
for (const path of files.filter(isLmdbFile)) {
  const into = join(destination, path);
  await mkdir(join(into, ".."), { recursive: true, mode: 0o700 });
  const db = open({ path: join(source, path), readOnly: true });
  try {
    await db.backup(into, compact);
  } finally {
    await db.close();
  }
  const bytes = (await stat(into)).size;
  manifest.stores.push({ path, bytes });
  manifest.bytes += bytes;
  process.stdout.write(`store ${path}: ${bytes} bytes\n`);
}

for (const path of files.filter((p) => !isLmdbFile(p))) {
  const into = join(destination, path);
  await mkdir(join(into, ".."), { recursive: true, mode: 0o700 });
  try {
    await copyFile(join(source, path), into);
  } catch (error) {
    // Deleted since the listing (a swept temporary): nothing to keep.
    if ((error as NodeJS.ErrnoException).code === "ENOENT") continue;
    throw error;
  }
  manifest.files += 1;
  manifest.bytes += (await stat(into)).size;
}

manifest.finished_at = new Date().toISOString();
await writeFile(join(destination, backupManifestName), JSON.stringify(manifest, null, 2) + "\n", { mode: 0o600 });
process.stdout.write(`${compact ? "compacted backup" : "backup"} of ${source} in ${destination}: ${manifest.stores.length} stores, ${manifest.files} files, ${manifest.bytes} bytes (began ${startedAt})\n`);
