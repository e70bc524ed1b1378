// The S3-compatible backend (distributed mode): every replica reads and
// writes the same bucket, so any replica serves any file. The gateway still
// serves /v1/files/{id} itself (streaming from the bucket, ranges passed
// through), so URLs never expire the way presigned ones would.
//
// The AWS SDK is imported only when this backend is opened: it is large, and
// the embedded mode's cold start must not pay for it. A PUT is atomic in S3,
// so a failed upload leaves nothing; the body is collected first because a
// PutObject needs its length (media files are bounded by the caller's cap).
import type { S3Client, S3ClientConfig } from "@aws-sdk/client-s3";
import { SCHEMA_VERSION, upgrade } from "../core/schema-version.ts";
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

export interface S3Settings {
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

type Sdk = typeof import("@aws-sdk/client-s3");

/** How every S3 client of Troupe's talks to the bucket (this store, the backup script, the tests' readers). */
export function s3ClientConfig(settings: S3Settings): S3ClientConfig {
  return {
    endpoint: settings.endpoint,
    region: settings.region,
    // Path-style URLs: S3-compatible servers (MinIO) are not reached by bucket subdomains.
    forcePathStyle: true,
    credentials: { accessKeyId: settings.accessKeyId, secretAccessKey: settings.secretAccessKey },
    // The SDK's default (since 3.729) adds CRC32 checksums that some S3-compatible servers reject.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  };
}

/** Object metadata keys (S3 lower-cases them; values must be ASCII). */
const meta = { organization: "organization-id", environment: "environment-id", scope: "scope", sha256: "sha256", created: "created-at", version: "schema-version" } as const;

export class S3FileStore implements FileStore {
  private readonly sdk: Sdk;
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly now: () => number;

  private constructor(sdk: Sdk, client: S3Client, bucket: string, now: () => number) {
    this.sdk = sdk;
    this.client = client;
    this.bucket = bucket;
    this.now = now;
  }

  /** Connects and creates the bucket when it does not exist yet. */
  static async open(settings: S3Settings, now: () => number = Date.now): Promise<S3FileStore> {
    const sdk = await import("@aws-sdk/client-s3");
    const client = new sdk.S3Client(s3ClientConfig(settings));
    const store = new S3FileStore(sdk, client, settings.bucket, now);
    try {
      await client.send(new sdk.HeadBucketCommand({ Bucket: settings.bucket }));
    } catch (e) {
      if (statusOf(e) !== 404) throw e;
      try {
        await client.send(new sdk.CreateBucketCommand({ Bucket: settings.bucket }));
      } catch (e) {
        // Replicas starting together race to create it; the loser's answer is
        // "you already own it", which is what it wanted.
        if (!(e instanceof sdk.BucketAlreadyOwnedByYou)) throw e;
      }
    }
    return store;
  }

  private key(id: string): string {
    return `files/${id}`;
  }

  async put(input: PutInput): Promise<StoredFile> {
    const id = newFileId();
    const chunks: Buffer[] = [];
    const file = await writeBody(id, input, this.now, (chunk) => chunks.push(chunk));
    await this.client.send(
      new this.sdk.PutObjectCommand({
        Bucket: this.bucket,
        Key: this.key(id),
        Body: Buffer.concat(chunks, file.size),
        ContentLength: file.size,
        ContentType: file.content_type,
        Metadata: { [meta.organization]: file.organization_id, ...(file.environment_id ? { [meta.environment]: file.environment_id } : {}), ...(file.scope ? { [meta.scope]: file.scope } : {}), [meta.sha256]: file.etag.slice(1, -1), [meta.created]: file.created_at, [meta.version]: String(SCHEMA_VERSION) },
      }),
    );
    return file;
  }

  async head(id: string): Promise<StoredFile | undefined> {
    if (!isFileId(id)) return undefined;
    try {
      const out = await this.client.send(new this.sdk.HeadObjectCommand({ Bucket: this.bucket, Key: this.key(id) }));
      return this.recordOf(id, out.Metadata, out.ContentType, out.ContentLength);
    } catch (e) {
      if (statusOf(e) === 404) return undefined;
      throw e;
    }
  }

  async get(id: string, range?: ByteRange): Promise<{ file: StoredFile; body: AsyncIterable<Buffer> } | undefined> {
    if (!isFileId(id)) return undefined;
    try {
      const out = await this.client.send(
        new this.sdk.GetObjectCommand({ Bucket: this.bucket, Key: this.key(id), ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}) }),
      );
      // With a range, ContentLength is the range's; the whole size is after the slash of Content-Range.
      const total = out.ContentRange ? Number(out.ContentRange.split("/")[1]) : out.ContentLength;
      const file = this.recordOf(id, out.Metadata, out.ContentType, total);
      // In Node the body is an IncomingMessage: an async iterable of Buffers.
      return { file, body: out.Body as AsyncIterable<Buffer> };
    } catch (e) {
      if (statusOf(e) === 404) return undefined;
      throw e;
    }
  }

  async delete(id: string): Promise<boolean> {
    if (!(await this.head(id))) return false;
    await this.client.send(new this.sdk.DeleteObjectCommand({ Bucket: this.bucket, Key: this.key(id) }));
    return true;
  }

  async close(): Promise<void> {
    this.client.destroy();
  }

  private recordOf(id: string, metadata: Record<string, string> | undefined, contentType: string | undefined, size: number | undefined): StoredFile {
    const record = {
      id,
      organization_id: metadata?.[meta.organization],
      // Absent on objects stored before files recorded them: null, the older files' rule.
      environment_id: metadata?.[meta.environment] ?? null,
      scope: metadata?.[meta.scope] ?? null,
      content_type: contentType ?? "application/octet-stream",
      size,
      etag: `"${metadata?.[meta.sha256] ?? ""}"`,
      created_at: metadata?.[meta.created],
    };
    // Objects stored before schema versions have no schema-version metadata: version 0.
    return storedFileSchema.parse(upgrade("file-metadata", Number(metadata?.[meta.version] ?? 0), record));
  }
}

function statusOf(e: unknown): number | undefined {
  if (e && typeof e === "object" && "$metadata" in e) {
    const m = (e as { $metadata?: { httpStatusCode?: number } }).$metadata;
    return m?.httpStatusCode;
  }
  return undefined;
}
