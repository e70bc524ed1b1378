// The distributed stores read straight, for the deletion tests: every Redis
// key (SCAN) with its value whatever its type, every document of Troupe's
// Elasticsearch indices, every object (key, metadata, bytes) of the bucket.
import { Redis } from "ioredis";
import type { S3Settings } from "../../media/s3-file-store.ts";
import type { Hit } from "./org-footprint.ts";
import { listS3Objects } from "./s3-objects.ts";

function hitsIn(text: string, needles: readonly string[], where: string): Hit[] {
  return needles.filter((n) => text.includes(n)).map((needle) => ({ where, needle }));
}

export interface RedisHit extends Hit {
  /** ms until the key expires; -1: never. */
  ttlMs: number;
}

export async function scanRedis(url: string, needles: readonly string[]): Promise<RedisHit[]> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2 });
  await redis.connect();
  try {
    const hits: RedisHit[] = [];
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "COUNT", 1000);
      cursor = next;
      for (const key of keys) {
        const type = await redis.type(key);
        let value: unknown;
        if (type === "string") value = await redis.getBuffer(key).then((b) => b?.toString("latin1"));
        else if (type === "zset") value = await redis.zrange(key, 0, -1, "WITHSCORES");
        else if (type === "hash") value = await redis.hgetall(key);
        else if (type === "list") value = await redis.lrange(key, 0, -1);
        else if (type === "set") value = await redis.smembers(key);
        else if (type === "stream") value = await redis.xrange(key, "-", "+");
        const found = hitsIn(`${key} ${JSON.stringify(value)}`, needles, `redis ${type} ${key}`);
        if (found.length === 0) continue;
        const ttlMs = await redis.pttl(key);
        hits.push(...found.map((h) => ({ ...h, ttlMs })));
      }
    } while (cursor !== "0");
    return hits;
  } finally {
    redis.disconnect();
  }
}

/** Every document of the indices matching `pattern` (Troupe's vector index and any index named after it). */
export async function scanElasticsearch(url: string, pattern: string, needles: readonly string[]): Promise<Hit[]> {
  await fetch(`${url}/${pattern}/_refresh`, { method: "POST" });
  const res = await fetch(`${url}/${pattern}/_search?size=10000`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ query: { match_all: {} } }) });
  if (!res.ok) throw new Error(`elasticsearch search: ${res.status} ${await res.text()}`);
  const body = (await res.json()) as { hits: { hits: { _index: string; _id: string; _source: unknown }[] } };
  return body.hits.hits.flatMap((doc) => hitsIn(`${doc._id} ${JSON.stringify(doc._source)}`, needles, `elasticsearch ${doc._index}/${doc._id}`));
}

export async function scanS3(settings: S3Settings, needles: readonly string[]): Promise<Hit[]> {
  const objects = await listS3Objects(settings);
  return objects.flatMap((o) => hitsIn(`${o.key} ${JSON.stringify(o.metadata)} ${o.body.toString("latin1")}`, needles, `s3 ${o.key}`));
}
