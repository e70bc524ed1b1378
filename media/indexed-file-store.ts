// The file store as the gateway uses it: a backend (data directory or S3)
// plus an index of each organization's files in the data store, so an
// organization's files can be found without listing every file — for the
// retention sweep (media/file-retention.ts) and for deleting an organization.
// Neither backend can list by organization (a file id is a bare capability
// and S3 keys carry no owner), and the data store is what every replica
// shares in both modes.
//
// Files are grouped by the UTC day of their creation: the sweep drops whole
// days, and a day's index holds only that day's files, so it never pages
// through the newer ones to find the old. A crash between storing the bytes
// and indexing them leaves a file only its URL reaches (never half a file).
import { indexMembers, type DataStore, type StoreOp } from "../core/data-store.ts";
import type { ByteRange, FileStore, PutInput, StoredFile } from "./file-store.ts";

export const dayMs = 24 * 3600_000;

export const fileIndexKeys = {
  /** Organizations that have stored files (the sweep's starting point). */
  orgs: "file-orgs",
  /** The days on which an organization stored files (score: the day's start). */
  days: (orgId: string) => `org-file-days:${orgId}`,
  /** One organization's files of one day (score: creation time). */
  day: (orgId: string, day: string) => `org-files:${orgId}:${day}`,
} as const;

/** The UTC day of an ISO time: `2026-11-25`. */
export function dayOf(iso: string): string {
  return iso.slice(0, 10);
}

export class IndexedFileStore implements FileStore {
  readonly backend: FileStore;
  private readonly store: DataStore;

  constructor(backend: FileStore, store: DataStore) {
    this.backend = backend;
    this.store = store;
  }

  async put(input: PutInput): Promise<StoredFile> {
    const file = await this.backend.put(input);
    const day = dayOf(file.created_at);
    const created = Date.parse(file.created_at);
    await this.store.apply([
      { op: "index", key: fileIndexKeys.orgs, member: file.organization_id, score: created },
      { op: "index", key: fileIndexKeys.days(file.organization_id), member: day, score: Date.parse(`${day}T00:00:00.000Z`) },
      { op: "index", key: fileIndexKeys.day(file.organization_id, day), member: file.id, score: created },
    ]);
    return file;
  }

  head(id: string): Promise<StoredFile | undefined> {
    return this.backend.head(id);
  }

  get(id: string, range?: ByteRange): Promise<{ file: StoredFile; body: AsyncIterable<Buffer> } | undefined> {
    return this.backend.get(id, range);
  }

  async delete(id: string): Promise<boolean> {
    const file = await this.backend.head(id);
    if (!file) return false;
    const deleted = await this.backend.delete(id);
    await this.store.apply([{ op: "unindex", key: fileIndexKeys.day(file.organization_id, dayOf(file.created_at)), member: id }]);
    return deleted;
  }

  /** Deletes every file of `orgId` stored on a day older than `beforeDayStartMs` (all of them when omitted) and their index entries; answers how many files went. */
  async deleteOrganizationFiles(orgId: string, beforeDayStartMs = Number.POSITIVE_INFINITY): Promise<number> {
    let deleted = 0;
    const days = await indexMembers(this.store, fileIndexKeys.days(orgId));
    let remaining = days.length;
    for (const day of days) {
      // A day is dropped once it has entirely passed the cutoff.
      if (Date.parse(`${day}T00:00:00.000Z`) + dayMs > beforeDayStartMs) continue;
      const key = fileIndexKeys.day(orgId, day);
      for (const id of await indexMembers(this.store, key)) {
        if (await this.backend.delete(id)) deleted += 1;
        await this.store.apply([{ op: "unindex", key, member: id }]);
      }
      await this.store.apply([{ op: "unindex", key: fileIndexKeys.days(orgId), member: day }]);
      remaining -= 1;
    }
    // Only when the whole organization goes: a retention pass racing a new upload must never unlist the organization.
    if (remaining === 0 && beforeDayStartMs === Number.POSITIVE_INFINITY) {
      const ops: StoreOp[] = [{ op: "unindex", key: fileIndexKeys.orgs, member: orgId }];
      await this.store.apply(ops);
    }
    return deleted;
  }

  /** Organizations with indexed files. */
  organizations(): Promise<string[]> {
    return indexMembers(this.store, fileIndexKeys.orgs);
  }

  close(): Promise<void> {
    return this.backend.close();
  }
}
