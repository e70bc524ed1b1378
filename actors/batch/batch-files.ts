// The files batches read and write (OpenAI's Files API, purpose "batch" and
// "batch_output"), and each line's answer, in the data store. A file is a
// head record plus its lines in pages of `pageLines`, so reading line i is
// one small read and no record grows with the file; every file is indexed
// per environment (listing) and per organization (deletion, retention).
import { randomBytes } from "node:crypto";
import { z } from "zod";
import type { DataStore, StoreOp } from "../../core/data-store.ts";

/** Lines per stored page: 500 lines of a typical chat request is ~100 KB. */
export const pageLines = 500;
/** Decoded pages a line reader keeps (see `lineReader`). */
const keptPages = 2;

export const batchFileSchema = z.object({
  id: z.string(),
  object: z.literal("file"),
  bytes: z.number().int(),
  created_at: z.number().int(),
  filename: z.string(),
  purpose: z.enum(["batch", "batch_output"]),
  status: z.literal("processed"),
  expires_at: z.number().int().nullable(),
  status_details: z.null(),
});
export type BatchFile = z.infer<typeof batchFileSchema>;

const storedFileSchema = batchFileSchema.extend({ organization_id: z.string(), environment_id: z.string(), lines: z.number().int() });
type StoredBatchFile = z.infer<typeof storedFileSchema>;

/** One line's answer: its output line (OpenAI's `{id, custom_id, response, error}` shape) and whether it is an error. */
export const lineResultSchema = z.object({ ok: z.boolean(), custom_id: z.string(), text: z.string() });
export type LineResult = z.infer<typeof lineResultSchema>;

const keys = {
  file: (id: string) => `batchfile:${id}`,
  page: (id: string, page: number) => `batchfile:${id}:page:${page}`,
  env: (environmentId: string) => `batchfiles:env:${environmentId}`,
  org: (organizationId: string) => `batchfiles:org:${organizationId}`,
  result: (batchId: string, index: number) => `batchresult:${batchId}:${index}`,
};

export interface FileOwner {
  organization_id: string;
  environment_id: string;
}

/** Lets the I/O already queued (interactive requests) run before the next slice of a large read or write. */
const yieldToIo = () => new Promise<void>((resolve) => setImmediate(resolve));

export const newFileId = (): string => `file-${randomBytes(12).toString("hex")}`;

/** A batch's output or error file id: the batch's own, so a finalize retried after a crash writes the same file again. */
export const outputFileId = (batchId: string, kind: "output" | "error"): string => `file-${batchId}-${kind}`;

export class BatchFiles {
  private readonly store: DataStore;
  private readonly now: () => number;

  constructor(store: DataStore, now: () => number) {
    this.store = store;
    this.now = now;
  }

  /**
   * Stores a file: an upload in one atomic write (the head, its pages and its
   * index entries); an output file (`id` given, so a retried finalize writes
   * the same file) page by page, visible once its head is written last.
   */
  async put(owner: FileOwner, input: { id?: string; filename: string; purpose: BatchFile["purpose"]; lines: readonly string[]; bytes: number; expiresAt?: number | null }): Promise<BatchFile> {
    const nowMs = this.now();
    const file: StoredBatchFile = {
      id: input.id ?? newFileId(),
      object: "file",
      bytes: input.bytes,
      created_at: Math.floor(nowMs / 1000),
      filename: input.filename,
      purpose: input.purpose,
      status: "processed",
      expires_at: input.expiresAt ?? null,
      status_details: null,
      organization_id: owner.organization_id,
      environment_id: owner.environment_id,
      lines: input.lines.length,
    };
    const ops: StoreOp[] = [{ op: "put", key: keys.file(file.id), value: file }];
    const pageOps: StoreOp[] = [];
    for (let page = 0; page * pageLines < input.lines.length; page++) pageOps.push({ op: "put", key: keys.page(file.id, page), value: input.lines.slice(page * pageLines, (page + 1) * pageLines) });
    ops.push({ op: "index", key: keys.env(owner.environment_id), member: file.id, score: nowMs }, { op: "index", key: keys.org(owner.organization_id), member: file.id, score: nowMs });
    if (input.id === undefined) {
      await this.store.apply([...ops, ...pageOps]);
    } else {
      // An output file (its id is the batch's): a page a write, the event loop turning in between, then the head and
      // index entries, which make it visible. One write of a 50,000-line output held the loop for its whole encoding,
      // beside interactive calls; a finalize retried after a crash in between writes the same pages again.
      for (const op of pageOps) {
        await this.store.apply([op]);
        await yieldToIo();
      }
      await this.store.apply(ops);
    }
    return publicFile(file);
  }

  /** The file, when `owner`'s environment holds it (another environment's is not found). */
  async get(owner: FileOwner, id: string): Promise<(BatchFile & { lines: number }) | undefined> {
    const stored = await this.stored(id);
    if (!stored || stored.organization_id !== owner.organization_id || stored.environment_id !== owner.environment_id) return undefined;
    return { ...publicFile(stored), lines: stored.lines };
  }

  /** Line `index` of a file (no owner check: the batch that reads it was checked when created). */
  async line(id: string, index: number): Promise<string | undefined> {
    const page = z.array(z.string()).safeParse(await this.store.get(keys.page(id, Math.floor(index / pageLines))));
    return page.success ? page.data[index % pageLines] : undefined;
  }

  /**
   * A reader of one file's lines that keeps the last pages it decoded: a
   * batch's runner reads its lines in order, and decoding a 500-line page
   * (~100 KB) for each line was most of a line's own CPU, taken from the
   * interactive calls beside it. Input files never change once stored; a
   * file deleted while its batch runs still gives the lines of a page
   * already read, and "missing" for the next pages.
   */
  lineReader(id: string): (index: number) => Promise<string | undefined> {
    const pages = new Map<number, Promise<readonly string[] | undefined>>();
    return async (index) => {
      const number = Math.floor(index / pageLines);
      let page = pages.get(number);
      if (!page) {
        page = this.store.get(keys.page(id, number)).then((value) => {
          const parsed = z.array(z.string()).safeParse(value);
          return parsed.success ? parsed.data : undefined;
        });
        pages.set(number, page);
        // A failed read is not kept: the line runs again later and reads again.
        page.catch(() => pages.delete(number));
        // Two pages: the one the cursor is in and the next, when the leased lines straddle them; older ones are not read again.
        for (const old of pages.keys()) if (pages.size > keptPages) pages.delete(old);
      }
      return (await page)?.[index % pageLines];
    };
  }

  /** The file's bytes: its lines, each ended by a newline. */
  async content(id: string): Promise<Buffer> {
    const stored = await this.stored(id);
    if (!stored) return Buffer.alloc(0);
    const pageKeys = Array.from({ length: Math.ceil(stored.lines / pageLines) }, (_, p) => keys.page(id, p));
    const pages = await this.store.getMany(pageKeys);
    const lines = pages.flatMap((p) => z.array(z.string()).catch([]).parse(p));
    return Buffer.from(lines.map((l) => `${l}\n`).join(""));
  }

  /** Newest first; `after`: the id the previous page ended with (OpenAI's cursor). */
  async list(owner: FileOwner, limit: number, after: string | undefined): Promise<{ data: BatchFile[]; has_more: boolean }> {
    const ids = await afterCursor(this.store, keys.env(owner.environment_id), limit + 1, after);
    const files = (await this.store.getMany(ids.map(keys.file))).flatMap((v) => {
      const parsed = storedFileSchema.safeParse(v);
      return parsed.success && parsed.data.organization_id === owner.organization_id ? [publicFile(parsed.data)] : [];
    });
    return { data: files.slice(0, limit), has_more: files.length > limit };
  }

  async delete(owner: FileOwner, id: string): Promise<boolean> {
    const stored = await this.stored(id);
    if (!stored || stored.organization_id !== owner.organization_id || stored.environment_id !== owner.environment_id) return false;
    await this.store.apply(deleteOps(stored));
    return true;
  }

  /** Records line `index`'s answer (a repeat overwrites: one answer per line whatever happens). */
  async putResult(batchId: string, index: number, result: LineResult): Promise<void> {
    await this.store.apply([{ op: "put", key: keys.result(batchId, index), value: result }]);
  }

  /** Records several lines' answers in one write (the runner's answer groups). */
  async putResults(batchId: string, answers: ReadonlyArray<{ index: number; result: LineResult }>): Promise<void> {
    await this.store.apply(answers.map(({ index, result }): StoreOp => ({ op: "put", key: keys.result(batchId, index), value: result })));
  }

  /** The answers of lines 0..total-1, in order (undefined: not answered). */
  async results(batchId: string, total: number): Promise<Array<LineResult | undefined>> {
    const out: Array<LineResult | undefined> = [];
    // Read in slices: a 50,000-line batch is not one 50,000-key read.
    for (let from = 0; from < total; from += pageLines) {
      if (from > 0) await yieldToIo();
      const values = await this.store.getMany(Array.from({ length: Math.min(pageLines, total - from) }, (_, i) => keys.result(batchId, from + i)));
      for (const v of values) {
        const parsed = lineResultSchema.safeParse(v);
        out.push(parsed.success ? parsed.data : undefined);
      }
    }
    return out;
  }

  /**
   * Organization deletion, per batch: its lines' answers, and every page its
   * output and error files can have. A finalize cut off by a crash leaves
   * pages whose head and index entries (written last) never were, which no
   * file listing finds; deleting a page never written is a no-op.
   */
  async eraseBatch(batchId: string, total: number): Promise<void> {
    for (let from = 0; from < total; from += pageLines) {
      await this.store.apply(Array.from({ length: Math.min(pageLines, total - from) }, (_, i): StoreOp => ({ op: "delete", key: keys.result(batchId, from + i) })));
    }
    const pages = Math.ceil(total / pageLines);
    for (const kind of ["output", "error"] as const) {
      const id = outputFileId(batchId, kind);
      for (let from = 0; from < pages; from += pageLines) {
        await this.store.apply(Array.from({ length: Math.min(pageLines, pages - from) }, (_, i): StoreOp => ({ op: "delete", key: keys.page(id, from + i) })));
      }
    }
  }

  /** Organization deletion: every batch file of the organization; answers how many went. */
  async deleteOrganization(organizationId: string): Promise<number> {
    let deleted = 0;
    for (;;) {
      const { members } = await this.store.page(keys.org(organizationId), 100);
      if (members.length === 0) return deleted;
      for (const id of members) {
        const stored = await this.stored(id);
        await this.store.apply(stored ? deleteOps(stored) : [{ op: "unindex", key: keys.org(organizationId), member: id }]);
        deleted += stored ? 1 : 0;
      }
    }
  }

  private async stored(id: string): Promise<StoredBatchFile | undefined> {
    const parsed = storedFileSchema.safeParse(await this.store.get(keys.file(id)));
    return parsed.success ? parsed.data : undefined;
  }
}

function publicFile(f: StoredBatchFile): BatchFile {
  return { id: f.id, object: "file", bytes: f.bytes, created_at: f.created_at, filename: f.filename, purpose: f.purpose, status: "processed", expires_at: f.expires_at, status_details: null };
}

function deleteOps(f: StoredBatchFile): StoreOp[] {
  const ops: StoreOp[] = [{ op: "delete", key: keys.file(f.id) }];
  for (let page = 0; page * pageLines < f.lines; page++) ops.push({ op: "delete", key: keys.page(f.id, page) });
  ops.push({ op: "unindex", key: keys.env(f.environment_id), member: f.id }, { op: "unindex", key: keys.org(f.organization_id), member: f.id });
  return ops;
}

/** Up to `limit` members of a newest-first index after the member `after` (all from the start without it). */
export async function afterCursor(store: DataStore, indexKey: string, limit: number, after: string | undefined): Promise<string[]> {
  const out: string[] = [];
  let seen = after === undefined;
  let cursor: string | null = null;
  do {
    const page = await store.page(indexKey, 200, cursor);
    for (const member of page.members) {
      if (seen) out.push(member);
      else if (member === after) seen = true;
      if (out.length >= limit) return out;
    }
    cursor = page.nextCursor;
  } while (cursor);
  return out;
}
