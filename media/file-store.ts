// The durable file store media results live in (docs/api/media.md, "The
// file URL model"). One interface, two backends run by one shared suite: the data
// directory (embedded default) and an S3-compatible bucket (distributed
// mode). A file id is an unguessable capability (`file_` + 128 random bits):
// whoever holds the URL may read the file, nobody can enumerate them.
import { createHash, randomBytes } from "node:crypto";
import { z } from "zod";

/** The API key scopes whose calls store files: deleting a file needs the one that made it. */
export type FileScope = "audio" | "images" | "video";

/** What the store records about a file besides its bytes. */
export const storedFileSchema = z.object({
  id: z.string(),
  /** The owning organization: for deletion and quotas. */
  organization_id: z.string(),
  /**
   * The environment whose key made it: only that environment's keys may
   * delete it, as jobs and conversations are that environment's alone. Null
   * for a file stored before files recorded it.
   */
  environment_id: z.string().nullable().default(null),
  /** The scope of the call that made it ("audio", "images", "video"): deleting it needs a key that could have made it. Null before files recorded it. */
  scope: z.string().nullable().default(null),
  content_type: z.string(),
  size: z.number().int().min(0),
  /** Strong validator: the SHA-256 of the bytes (hex), quoted as HTTP wants it. */
  etag: z.string(),
  created_at: z.string(),
});
export type StoredFile = z.infer<typeof storedFileSchema>;

export interface PutInput {
  body: Buffer | AsyncIterable<Buffer>;
  contentType: string;
  organizationId: string;
  environmentId: string;
  /** The scope of the call storing it. */
  scope: FileScope;
  /** Refuses (and stores nothing) when the body passes this many bytes. */
  maxBytes?: number;
}

/** Inclusive byte range, both ends within the file. */
export interface ByteRange {
  start: number;
  end: number;
}

export interface FileStore {
  /** Stores the bytes; the file becomes visible only once completely stored. */
  put(input: PutInput): Promise<StoredFile>;
  head(id: string): Promise<StoredFile | undefined>;
  /** The bytes (or the range of them); undefined for an unknown id. */
  get(id: string, range?: ByteRange): Promise<{ file: StoredFile; body: AsyncIterable<Buffer> } | undefined>;
  /** True when something was deleted. */
  delete(id: string): Promise<boolean>;
  close(): Promise<void>;
}

/** 16 random bytes = 128 bits, base64url: 22 characters. */
const idPattern = /^file_[A-Za-z0-9_-]{22}$/;

export function newFileId(): string {
  return `file_${randomBytes(16).toString("base64url")}`;
}

/** Ids come from URLs: anything not shaped like ours is unknown (and never reaches a path or a key). */
export function isFileId(id: string): boolean {
  return idPattern.test(id);
}

export class FileTooLargeError extends Error {
  readonly maxBytes: number;
  constructor(maxBytes: number) {
    super(`the file exceeds the limit of ${maxBytes} bytes`);
    this.name = "FileTooLargeError";
    this.maxBytes = maxBytes;
  }
}

/** Iterates a body given as one buffer or as chunks. */
export async function* chunksOf(body: Buffer | AsyncIterable<Buffer>): AsyncIterable<Buffer> {
  if (Buffer.isBuffer(body)) yield body;
  else yield* body;
}

/**
 * Reads a body chunk by chunk into `write`, refusing it once it passes
 * `maxBytes` and hashing it on the way; answers the record of what was
 * written (both backends store the same record). `now` is read after the
 * last chunk.
 */
export async function writeBody(id: string, input: PutInput, now: () => number, write: (chunk: Buffer) => unknown): Promise<StoredFile> {
  const hash = createHash("sha256");
  let size = 0;
  for await (const chunk of chunksOf(input.body)) {
    size += chunk.length;
    if (input.maxBytes !== undefined && size > input.maxBytes) throw new FileTooLargeError(input.maxBytes);
    hash.update(chunk);
    await write(chunk);
  }
  return {
    id,
    organization_id: input.organizationId,
    environment_id: input.environmentId,
    scope: input.scope,
    content_type: input.contentType,
    size,
    etag: `"${hash.digest("hex")}"`,
    created_at: new Date(now()).toISOString(),
  };
}
