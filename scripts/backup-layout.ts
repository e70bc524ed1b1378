// What `npm run backup` and `npm run restore` agree on: which files of the
// data directory are lmdb environments (copied by lmdb's backup), which are
// never copied, and the manifest a backup leaves beside its files.
import { z } from "zod";

export const backupManifestName = "troupe-backup.json";

export const backupManifestSchema = z.object({
  format: z.literal(1),
  started_at: z.string(),
  finished_at: z.string(),
  source: z.string(),
  /** Made with `--compact`: the lmdb stores copied without their free pages (absent in backups made before the flag). */
  compacted: z.boolean().optional(),
  stores: z.array(z.object({ path: z.string(), bytes: z.number() })),
  files: z.number(),
  bytes: z.number(),
});
export type BackupManifest = z.infer<typeof backupManifestSchema>;

/** lmdb environments: `tenancy/tenancy.lmdb`, `actors/actors.mdb`, `billing/ledger.lmdb`, `vectors/records.mdb`. */
export function isLmdbFile(path: string): boolean {
  return /\.(lmdb|mdb)$/.test(path);
}

/** lmdb's lock files (rebuilt on open) and the file store's half-written temporaries (swept on open). */
export function isSkipped(path: string): boolean {
  return /-lock$/.test(path) || path.split("/").includes(".tmp");
}
