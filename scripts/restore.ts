// `npm run restore -- <dir>`: brings a copy made by `npm run backup` back
// as TROUPE_DATA_DIR, with Troupe stopped. The data directory must be new
// or empty (a restore never mixes two states). The copy is written to a
// sibling directory first and renamed into place, so a restore cut short
// leaves no half-restored data directory behind.
import { cp, readFile, readdir, rename, rm, stat } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { z } from "zod";
import { loadConfig } from "../gateway/config.ts";
import { backupManifestName, backupManifestSchema } from "./backup-layout.ts";

function fail(message: string): never {
  process.stderr.write(`restore: ${message}\n`);
  process.exit(1);
}

const source = process.argv.slice(2).find((a) => !a.startsWith("--"));
if (source === undefined) fail("usage: npm run restore -- <directory made by npm run backup>");
const from = resolve(source);
const config = loadConfig();
if (config.mode !== "embedded") fail("TROUPE_MODE=dapr keeps its data in Redis, Elasticsearch and S3: see docs/operations/backup-and-restore.md");
const dataDir = resolve(config.dataDir);

let manifestText: string;
try {
  manifestText = await readFile(join(from, backupManifestName), "utf8");
} catch {
  fail(`${from} has no ${backupManifestName}: not a finished backup`);
}
const manifest = backupManifestSchema.safeParse(JSON.parse(manifestText));
if (!manifest.success) fail(`${join(from, backupManifestName)} is not a backup manifest this Troupe reads:\n${z.prettifyError(manifest.error)}`);

const existing = await readdir(dataDir).catch(() => []);
if (existing.length > 0) fail(`${dataDir} (TROUPE_DATA_DIR) is not empty: restore into a new or empty data directory, with Troupe stopped`);
if ((await stat(dataDir).catch(() => undefined)) !== undefined) await rm(dataDir, { recursive: true });

const staging = join(dirname(dataDir), `.${basename(dataDir)}.restoring-${process.pid}`);
await cp(from, staging, { recursive: true, filter: (path) => basename(path) !== backupManifestName });
await rename(staging, dataDir);
process.stdout.write(`restored ${manifest.data.stores.length} stores and ${manifest.data.files} files from ${from} (backup began ${manifest.data.started_at}) into ${dataDir}\n`);
