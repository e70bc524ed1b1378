// One suite, both cache stores (lmdb and Redis): round trip, scope checked on
// read, TTL on the injected clock, the per-organization byte quota with LRU
// eviction, the per-entry limit, clearing a project, and an organization's
// deletion leaving nothing behind — checked by scanning the lmdb database
// and Redis's keys, not by asking the store.
import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Cluster, Redis } from "ioredis";
import { open } from "lmdb";
import t, { type Test } from "tap";
import { EmbeddedCacheStore, type CacheLimits } from "../../../gateway/cache/embedded-cache-store.ts";
import { RedisCacheStore } from "../../../gateway/cache/redis-cache-store.ts";
import type { CacheEntry, CacheScope, CacheStore } from "../../../gateway/cache/types.ts";
import { startTestRedis } from "../../support/redis.ts";
import { startTestRedisCluster } from "../../support/redis-cluster.ts";

let nowMs = 1_800_000_000_000;
const clock = { now: () => nowMs };
// Unique per run: CI's Redis is shared by every test file.
const run = randomBytes(4).toString("hex");

function entry(scope: CacheScope, content: string, ttlMs = 60_000): CacheEntry {
  return {
    scope,
    answer: { kind: "chat", result: { content, finish_reason: "stop", model: "gpt-4.1-mini", provider: "openai", input_tokens: 3, output_tokens: 5, tool_calls: null } },
    stored_ms: nowMs,
    expires_ms: nowMs + ttlMs,
  };
}

/** Text that deflate cannot shrink much: its stored size stays near its length. */
const noise = (bytes: number) => randomBytes(bytes).toString("base64").slice(0, bytes);

interface Subject {
  make(limits: CacheLimits): Promise<CacheStore>;
  /** Every raw key the backend still holds that mentions the organization. */
  leftovers(orgId: string): Promise<string[]>;
  close(): Promise<void>;
}

async function suite(t: Test, name: string, subject: Subject): Promise<void> {
  const limits: CacheLimits = { orgQuotaBytes: 10_000, maxEntryBytes: 8_000 };
  const store = await subject.make(limits);
  t.teardown(async () => {
    await store.close();
    await subject.close();
  });
  const org = `org_${name}_${run}`;
  const scope: CacheScope = { organization_id: org, project_id: "prj_1", environment_id: "env_1" };
  const digest = (n: number) => n.toString(16).padStart(64, "0");

  t.test("round trip; another scope never reads it", async (t) => {
    t.ok((await store.put(digest(1), entry(scope, "hello"))) > 0, "resolves to the bytes stored");
    const got = await store.get(scope, digest(1));
    t.equal(got?.answer.kind === "chat" ? got.answer.result.content : undefined, "hello");
    t.equal(await store.get({ ...scope, environment_id: "env_2" }, digest(1)), undefined, "another environment");
    t.equal(await store.get({ ...scope, organization_id: `${org}_x` }, digest(1)), undefined, "another organization");
    await store.delete(scope, digest(1));
    t.equal(await store.get(scope, digest(1)), undefined, "deleted");
  });

  t.test("every hit is a fresh object: a caller's change never reaches the next hit", async (t) => {
    await store.put(digest(2_000), entry(scope, "untouched"));
    for (let i = 0; i < 3; i++) {
      const got = await store.get(scope, digest(2_000));
      t.equal(got?.answer.kind === "chat" ? got.answer.result.content : undefined, "untouched", `hit ${i + 1}`);
      if (got?.answer.kind === "chat") got.answer.result.content = "changed by a caller";
    }
    await store.put(digest(2_000), entry(scope, "replaced"));
    const replaced = await store.get(scope, digest(2_000));
    t.equal(replaced?.answer.kind === "chat" ? replaced.answer.result.content : undefined, "replaced", "a put replaces what a hit reads");
    await store.delete(scope, digest(2_000));
  });

  t.test("TTL on the injected clock", async (t) => {
    await store.put(digest(2), entry(scope, "short", 5_000));
    t.ok(await store.get(scope, digest(2)), "live");
    nowMs += 6_000;
    t.equal(await store.get(scope, digest(2)), undefined, "expired");
  });

  t.test("an entry over the per-entry limit is not stored", async (t) => {
    t.equal(await store.put(digest(3), entry(scope, noise(9_000))), 0);
    t.equal(await store.get(scope, digest(3)), undefined);
  });

  t.test("the quota keeps the most recently used", async (t) => {
    const quotaScope = { ...scope, organization_id: `${org}_quota` };
    // Each ~2.2 KB stored: ten of them are twice the 10 KB quota.
    for (let i = 0; i < 4; i++) await store.put(digest(100 + i), entry(quotaScope, noise(2_000)));
    nowMs += 1;
    t.ok(await store.get(quotaScope, digest(100)), "the oldest, used again");
    for (let i = 4; i < 10; i++) {
      nowMs += 1;
      // Read before each put: always among the most recently used.
      await store.get(quotaScope, digest(100));
      nowMs += 1;
      await store.put(digest(100 + i), entry(quotaScope, noise(2_000)));
    }
    const bytes = await store.bytesOf(quotaScope.organization_id);
    t.ok(bytes <= limits.orgQuotaBytes && bytes > limits.orgQuotaBytes / 2, `within the quota (${bytes} bytes)`);
    t.ok(await store.get(quotaScope, digest(109)), "the newest is kept");
    t.equal(await store.get(quotaScope, digest(101)), undefined, "an old, unused one was evicted");
    t.ok(await store.get(quotaScope, digest(100)), "the old one used recently is kept");
    t.equal(await store.bytesOf(org), await store.bytesOf(org), "another organization's count is its own");
  });

  t.test("clearing a project removes only its entries", async (t) => {
    const other = { ...scope, project_id: "prj_2" };
    await store.put(digest(20), entry(scope, "one"));
    await store.put(digest(21), entry(other, "two"));
    t.equal(await store.clearProject(org, "prj_2"), 1);
    t.equal(await store.get(other, digest(21)), undefined);
    t.ok(await store.get(scope, digest(20)), "the other project's entry stays");
  });

  t.test("an organization's deletion leaves nothing", async (t) => {
    for (let i = 0; i < 5; i++) await store.put(digest(30 + i), entry({ ...scope, environment_id: `env_${i}` }, `answer ${i}`));
    const neighbour = { ...scope, organization_id: `${org}_neighbour` };
    await store.put(digest(40), entry(neighbour, "stays"));
    t.ok((await subject.leftovers(org)).length > 0, "the scan sees the organization's keys before");
    await store.clearOrganization(org);
    t.same(await subject.leftovers(org), [], "no key of the organization in the backend");
    t.equal(await store.bytesOf(org), 0);
    t.ok(await store.get(neighbour, digest(40)), "another organization's entries stay");
  });
}

t.test("embedded (lmdb)", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-cache-store-"));
  await suite(t, "lmdb", {
    make: async (limits) => new EmbeddedCacheStore(dir, limits, clock),
    leftovers: async (orgId) => {
      // A second reader of the same file: what is committed, whatever the store lists in memory.
      const db = open({ path: join(dir, "cache", "cache.lmdb"), readOnly: true }).openDB<Buffer, string>({ name: "entries", encoding: "binary" });
      return [...db.getKeys()].filter((k) => k.startsWith(`${orgId}\n`));
    },
    close: async () => undefined,
  });
});

t.test("Redis", async (t) => {
  const redis = await startTestRedis();
  const raw = new Redis(redis.url);
  await suite(t, "redis", {
    make: async (limits) => new RedisCacheStore({ url: redis.url }, limits, clock, `troupe-test-${run}:cache:`),
    leftovers: async (orgId) => (await raw.keys(`troupe-test-${run}:*`)).filter((k) => k.includes(`{${orgId}}`)),
    close: async () => {
      await raw.quit();
      await redis.stop();
    },
  });
});

t.test("Redis Cluster: an organization's keys share one hash tag (one slot), and the suite holds on the cluster", async (t) => {
  const cluster = await startTestRedisCluster();
  const raw = new Cluster(cluster.nodes.map((n) => ({ host: n.split(":")[0], port: Number(n.split(":")[1]) })));
  const prefix = `troupe-test-${run}:cache:`;
  const keysOf = async (orgId: string) => {
    const found: string[] = [];
    for (const node of raw.nodes("master")) found.push(...(await node.keys(`${prefix}*`)).filter((k) => k.includes(`{${orgId}}`)));
    return found;
  };
  const probe = new RedisCacheStore({ clusterNodes: cluster.nodes }, { orgQuotaBytes: 10_000, maxEntryBytes: 8_000 }, clock, prefix);
  const probeScope: CacheScope = { organization_id: `org_slot_${run}`, project_id: "prj_1", environment_id: "env_1" };
  await probe.put("ab".repeat(32), entry(probeScope, "on the cluster"));
  const hit = await probe.get(probeScope, "ab".repeat(32));
  t.equal(hit?.answer.kind === "chat" ? hit.answer.result.content : undefined, "on the cluster", "a hit read back on the cluster");
  const keys = await keysOf(probeScope.organization_id);
  t.ok(keys.length >= 4, `entry, lru, meta and bytes keys (${keys.length})`);
  const slots = new Set(await Promise.all(keys.map((k) => raw.cluster("KEYSLOT", k))));
  t.equal(slots.size, 1, "every key of the organization in one slot");
  await probe.close();
  await suite(t, "cluster", {
    make: async (limits) => new RedisCacheStore({ clusterNodes: cluster.nodes }, limits, clock, prefix),
    leftovers: keysOf,
    close: async () => {
      await raw.quit();
      await cluster.stop();
    },
  });
});
