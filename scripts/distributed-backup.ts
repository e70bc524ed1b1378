// The distributed backup procedure of docs/operations/backup-and-restore.md,
// one function per store, used by scripts/check-distributed-backup.ts:
//   Redis: BGSAVE, wait for LASTSAVE to move, copy dump.rdb out of its dir;
//          restore = stop it, put dump.rdb back, start it (appendonly off).
//   Elasticsearch: a filesystem snapshot repository under path.repo,
//          PUT _snapshot/<repo>/<name>?wait_for_completion=true; restore =
//          POST …/_restore of the index (deleted first when present).
//   S3: every object of the bucket copied to a directory (its key as the
//          path, its content type and metadata beside); restore = every
//          object put back under its key with them.
import { copyFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { Redis } from "ioredis";
import { s3ClientConfig, type S3Settings } from "../media/s3-file-store.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// --- Redis -------------------------------------------------------------------

/** BGSAVE, then copies the fresh dump.rdb to `into`; returns its size. */
export async function backupRedis(url: string, into: string): Promise<number> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    const before = Number(await redis.lastsave());
    await redis.bgsave();
    // LASTSAVE has a one-second resolution: wait until it moves past the one before BGSAVE.
    for (const until = Date.now() + 60_000; Number(await redis.lastsave()) === before; await sleep(100)) {
      if (Date.now() > until) throw new Error("redis: BGSAVE did not finish within 60 s");
    }
    const [, dir] = (await redis.config("GET", "dir")) as [string, string];
    const [, file] = (await redis.config("GET", "dbfilename")) as [string, string];
    mkdirSync(into, { recursive: true });
    copyFileSync(join(dir, file), join(into, "dump.rdb"));
    return statSync(join(into, "dump.rdb")).size;
  } finally {
    redis.disconnect();
  }
}

/** Puts the copied dump.rdb where a stopped Redis will load it from (its dir and dbfilename). */
export function restoreRedisFile(from: string, redisDir: string, dbFilename = "dump.rdb"): void {
  copyFileSync(join(from, "dump.rdb"), join(redisDir, dbFilename));
}

// --- Elasticsearch -----------------------------------------------------------

async function es(url: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const res = await fetch(url + path, { method, headers: body === undefined ? {} : { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as unknown) : undefined };
}

/** Registers the fs repository `repo` at `location` (inside path.repo) and snapshots `index` as `name`. */
export async function backupElasticsearch(url: string, repo: string, location: string, name: string, index: string): Promise<string> {
  const registered = await es(url, "PUT", `/_snapshot/${repo}`, { type: "fs", settings: { location } });
  if (registered.status !== 200) throw new Error(`elasticsearch: registering the repository: ${registered.status} ${JSON.stringify(registered.json)}`);
  const snap = await es(url, "PUT", `/_snapshot/${repo}/${name}?wait_for_completion=true`, { indices: index, include_global_state: false });
  const state = (snap.json as { snapshot?: { state?: string; shards?: { successful?: number } } } | undefined)?.snapshot;
  if (snap.status !== 200 || state?.state !== "SUCCESS") throw new Error(`elasticsearch: snapshot: ${snap.status} ${JSON.stringify(snap.json)}`);
  return `${name}: ${state.shards?.successful ?? "?"} shards`;
}

/** Restores `index` from snapshot `name` (the index is deleted first when it exists). */
export async function restoreElasticsearch(url: string, repo: string, location: string, name: string, index: string): Promise<void> {
  // A new cluster needs the repository registered again (same location) before it sees the snapshot.
  await es(url, "PUT", `/_snapshot/${repo}`, { type: "fs", settings: { location } });
  await es(url, "DELETE", `/${index}`);
  const restored = await es(url, "POST", `/_snapshot/${repo}/${name}/_restore?wait_for_completion=true`, { indices: index, include_global_state: false });
  if (restored.status !== 200) throw new Error(`elasticsearch: restore: ${restored.status} ${JSON.stringify(restored.json)}`);
}

export async function deleteIndex(url: string, index: string): Promise<void> {
  await es(url, "DELETE", `/${index}`);
}

// --- S3 ------------------------------------------------------------------------

function s3Client(s: S3Settings): S3Client {
  return new S3Client(s3ClientConfig(s));
}

async function keys(client: S3Client, bucket: string): Promise<string[]> {
  const out: string[] = [];
  let token: string | undefined;
  do {
    const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }));
    out.push(...(page.Contents ?? []).flatMap((o) => (o.Key ? [o.Key] : [])));
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return out;
}

/** An object's headers Troupe reads back (its file store keeps the file's name and type in them). */
interface ObjectHeaders {
  contentType?: string;
  metadata?: Record<string, string>;
}

/**
 * Copies every object of the bucket into `into`/objects (key = relative
 * path), with its content type and user metadata in `into`/objects.json;
 * returns how many.
 */
export async function backupS3(s: S3Settings, into: string): Promise<number> {
  const client = s3Client(s);
  const headers: Record<string, ObjectHeaders> = {};
  try {
    const all = await keys(client, s.bucket);
    for (const key of all) {
      const object = await client.send(new GetObjectCommand({ Bucket: s.bucket, Key: key }));
      const target = join(into, "objects", key);
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, await object.Body!.transformToByteArray());
      headers[key] = { contentType: object.ContentType, metadata: object.Metadata };
    }
    writeFileSync(join(into, "objects.json"), JSON.stringify(headers));
    return all.length;
  } finally {
    client.destroy();
  }
}

/** Puts every object of a backupS3 copy back into the bucket, with its headers. */
export async function restoreS3(s: S3Settings, from: string): Promise<number> {
  const client = s3Client(s);
  const headers = JSON.parse(readFileSync(join(from, "objects.json"), "utf8")) as Record<string, ObjectHeaders>;
  try {
    for (const [key, h] of Object.entries(headers)) {
      await client.send(new PutObjectCommand({ Bucket: s.bucket, Key: key, Body: readFileSync(join(from, "objects", key)), ContentType: h.contentType, Metadata: h.metadata }));
    }
    return Object.keys(headers).length;
  } finally {
    client.destroy();
  }
}

/** Deletes every object of the bucket (the bucket stays). */
export async function emptyBucket(s: S3Settings): Promise<number> {
  const client = s3Client(s);
  try {
    const all = await keys(client, s.bucket);
    for (const key of all) await client.send(new DeleteObjectCommand({ Bucket: s.bucket, Key: key }));
    return all.length;
  } finally {
    client.destroy();
  }
}
