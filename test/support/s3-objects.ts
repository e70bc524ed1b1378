// What a bucket holds, read straight from S3 (not through Troupe): each
// object's key, metadata and bytes — for tests that check something is gone.
import type { S3Settings } from "../../media/s3-file-store.ts";

export interface S3Object {
  key: string;
  metadata: Record<string, string>;
  body: Buffer;
}

export async function listS3Objects(settings: S3Settings): Promise<S3Object[]> {
  const { S3Client, ListObjectsV2Command, GetObjectCommand } = await import("@aws-sdk/client-s3");
  const client = new S3Client({
    endpoint: settings.endpoint,
    region: settings.region,
    forcePathStyle: true,
    credentials: { accessKeyId: settings.accessKeyId, secretAccessKey: settings.secretAccessKey },
  });
  try {
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
  } finally {
    client.destroy();
  }
}
