// The data-directory backend (embedded default). Each file is two entries in
// <root>/<shard>/: the bytes (<id>) and their record (<id>.json). Both are
// written to temporary names in <root>/.tmp (same filesystem), flushed, then
// renamed into place, the record last: a reader sees a file only once its
// record exists, so a crash or a failed copy never leaves a half-stored file
// visible, and leftovers in .tmp are swept at open.
import { createReadStream } from "node:fs";
import { mkdir, open, readFile, readdir, rename, rm, unlink } from "node:fs/promises";
import { join } from "node:path";
import { parseVersioned, versionedJson } from "../core/schema-version.ts";
import {
  isFileId,
  newFileId,
  storedFileSchema,
  type ByteRange,
  type FileStore,
  type PutInput,
  type StoredFile,
  writeBody,
} from "./file-store.ts";

export class LocalFileStore implements FileStore {
  private readonly root: string;
  private readonly tmp: string;
  private readonly now: () => number;
  private tmpCounter = 0;

  private constructor(root: string, now: () => number) {
    this.root = root;
    this.tmp = join(root, ".tmp");
    this.now = now;
  }

  /** Opens (creating) the store under `root`; removes temporaries a crash left behind. */
  static async open(root: string, now: () => number = Date.now): Promise<LocalFileStore> {
    const store = new LocalFileStore(root, now);
    await rm(store.tmp, { recursive: true, force: true });
    await mkdir(store.tmp, { recursive: true });
    return store;
  }

  private dataPath(id: string): string {
    // Two characters of the random part: 4096 folders, so no folder grows huge.
    return join(this.root, id.slice(5, 7), id);
  }

  async put(input: PutInput): Promise<StoredFile> {
    const id = newFileId();
    const base = join(this.tmp, `${process.pid}-${++this.tmpCounter}-${id}`);
    const tmpData = `${base}.data`;
    const tmpMeta = `${base}.json`;
    try {
      const handle = await open(tmpData, "w");
      let file: StoredFile;
      try {
        file = await writeBody(id, input, this.now, (chunk) => handle.write(chunk));
        await handle.sync();
      } finally {
        await handle.close();
      }
      const metaHandle = await open(tmpMeta, "w");
      try {
        await metaHandle.writeFile(versionedJson(JSON.stringify(file)));
        await metaHandle.sync();
      } finally {
        await metaHandle.close();
      }
      const target = this.dataPath(id);
      await mkdir(join(this.root, id.slice(5, 7)), { recursive: true });
      await rename(tmpData, target);
      await rename(tmpMeta, `${target}.json`);
      return file;
    } catch (e) {
      await rm(tmpData, { force: true });
      await rm(tmpMeta, { force: true });
      throw e;
    }
  }

  async head(id: string): Promise<StoredFile | undefined> {
    if (!isFileId(id)) return undefined;
    let raw: string;
    try {
      raw = await readFile(`${this.dataPath(id)}.json`, "utf8");
    } catch (e) {
      if (isMissing(e)) return undefined;
      throw e;
    }
    return storedFileSchema.parse(parseVersioned("file-metadata", raw));
  }

  async get(id: string, range?: ByteRange): Promise<{ file: StoredFile; body: AsyncIterable<Buffer> } | undefined> {
    const file = await this.head(id);
    if (!file) return undefined;
    const stream = createReadStream(this.dataPath(id), range ? { start: range.start, end: range.end } : {});
    return { file, body: stream as AsyncIterable<Buffer> };
  }

  async delete(id: string): Promise<boolean> {
    if (!isFileId(id)) return false;
    const target = this.dataPath(id);
    // The record first: from then on the file is gone for readers.
    try {
      await unlink(`${target}.json`);
    } catch (e) {
      if (isMissing(e)) return false;
      throw e;
    }
    await rm(target, { force: true });
    return true;
  }

  /** Ids of every stored file (tests check nothing half-stored is left). */
  async list(): Promise<string[]> {
    const ids: string[] = [];
    for (const shard of await readdir(this.root)) {
      if (shard === ".tmp") continue;
      for (const name of await readdir(join(this.root, shard))) if (name.endsWith(".json")) ids.push(name.slice(0, -5));
    }
    return ids;
  }

  /** Entries in the temporary folder (empty unless a put is in flight). */
  async pendingTemporaries(): Promise<number> {
    return (await readdir(this.tmp)).length;
  }

  async close(): Promise<void> {
    // Nothing held open between calls.
  }
}

function isMissing(e: unknown): boolean {
  return e instanceof Error && "code" in e && e.code === "ENOENT";
}
