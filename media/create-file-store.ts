// Picks the file store backend from config: an S3-compatible bucket when
// S3_ENDPOINT is set (distributed mode: every replica sees every file),
// otherwise the data directory.
import { join } from "node:path";
import type { MediaConfig } from "../core/config.ts";
import type { FileStore } from "./file-store.ts";
import { LocalFileStore } from "./local-file-store.ts";

export async function createFileStore(media: Pick<MediaConfig, "s3">, dataDir: string): Promise<FileStore> {
  if (media.s3) {
    // Loaded only here, so the embedded mode never loads the AWS SDK.
    const { S3FileStore } = await import("./s3-file-store.ts");
    return S3FileStore.open(media.s3);
  }
  return LocalFileStore.open(join(dataDir, "files"));
}
