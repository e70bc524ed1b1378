// What a bucket holds, read straight from S3 (not through Troupe): each
// object's key, metadata and bytes, or how many there are — for tests that
// check something is stored or gone.
import type { S3Client } from "@aws-sdk/client-s3";
import { s3ClientConfig, type S3Settings } from "../../media/s3-file-store.ts";

type Sdk = typeof import("@aws-sdk/client-s3");

export interface S3Object {
  key: string;
  metadata: Record<string, string>;
  body: Buffer;
}

/** A client of its own for one use, destroyed after it. */
async function withClient<T>(settings: S3Settings, use: (client: S3Client, sdk: Sdk) => Promise<T>): Promise<T> {
  const sdk = await import("@aws-sdk/client-s3");
  const client = new sdk.S3Client(s3ClientConfig(settings));
  try {
    return await use(client, sdk);
  } finally {
    client.destroy();
  }
}

export function listS3Objects(settings: S3Settings): Promise<S3Object[]> {
  return withClient(settings, async (client, { ListObjectsV2Command, GetObjectCommand }) => {
    const out: S3Object[] = [];
    let token: string | undefined;
    do {
      const page = await client.send(new ListObjectsV2Command({ Bucket: settings.bucket, ContinuationToken: token }));
      for (const item of page.Contents ?? []) {
        if (!item.Key) continue;
        const got = await client.send(new GetObjectCommand({ Bucket: settings.bucket, Key: item.Key }));
        out.push({ key: item.Key, metadata: got.Metadata ?? {}, body: Buffer.from(await got.Body!.transformToByteArray()) });
      }
      token = page.NextContinuationToken;
    } while (token);
    return out;
  });
}

/** How many objects the bucket holds (one listing page: up to 1,000, more than any test stores). */
export function countS3Objects(settings: S3Settings): Promise<number> {
  return withClient(settings, async (client, { ListObjectsV2Command }) => {
    const out = await client.send(new ListObjectsV2Command({ Bucket: settings.bucket }));
    return out.KeyCount ?? 0;
  });
}
