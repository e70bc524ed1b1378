// The data directory holds account records, session and key hashes and
// actor state (webhook secrets among it): nobody but the user Troupe runs as
// may read it. main.ts sets the process umask to 077 before anything is
// created, so every file Troupe writes is 0600 and every directory 0700
// (lmdb, the media store and the vector index all create theirs under it).
// Here the directory itself is made 0700, or tightened to 0700 when it
// already exists (a data directory from an earlier version was 0755 with
// 0644 files: closing the directory closes them all).
import { chmodSync, mkdirSync } from "node:fs";
import type { Logger } from "../core/log.ts";

/** Permissions the process creates files with: owner only. */
export const ownerOnlyUmask = 0o077;

export function prepareDataDir(dir: string, log: Logger): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  try {
    chmodSync(dir, 0o700);
  } catch (error) {
    // A mounted volume owned by another user: Troupe still runs, and says so.
    log.warn("could not make the data directory private (chmod 700)", { dir, error });
  }
}
