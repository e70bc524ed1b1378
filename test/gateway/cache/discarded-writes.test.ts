// A cache write still in flight when the project's cache is cleared (or the
// organization deleted) never lands afterwards (ResponseCache.discardWrites,
// what every replica runs when it hears the clear: gateway/features/cache.ts).
// The real lmdb store, behind a gate that holds each put until the test lets
// it go: the answer is asked through the caching router (real simulated
// provider) in a request's cache context, the clear happens while its write
// is held, the write is released, and the entry is looked for in the store
// and by asking the identical question again (a miss, a provider call).
import t, { type Test } from "tap";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../../../core/log.ts";
import { loadConfig } from "../../../gateway/config.ts";
import { ResponseState } from "../../../gateway/http-io.ts";
import { createRouter } from "../../../providers/index.ts";
import type { ChatRequest } from "../../../providers/chat-request.ts";
import type { Router } from "../../../providers/router.ts";
import { EmbeddedDataStore } from "../../../tenancy/embedded-data-store.ts";
import { chatCacheKey, type KeyOwner } from "../../../gateway/cache/cache-key.ts";
import { CacheMetrics } from "../../../gateway/cache/cache-metrics.ts";
import { withCacheRequest, type CacheRequest } from "../../../gateway/cache/cache-request.ts";
import { cachingRouter } from "../../../gateway/cache/caching-router.ts";
import { EmbeddedCacheStore } from "../../../gateway/cache/embedded-cache-store.ts";
import { ProjectCacheSettingsStore } from "../../../gateway/cache/project-cache-settings.ts";
import { ResponseCache } from "../../../gateway/cache/response-cache.ts";
import type { CacheEntry, CacheScope, CacheStore } from "../../../gateway/cache/types.ts";

const cleared: KeyOwner = { organization_id: "org-d", project_id: "proj-cleared", environment_id: "env-d", live: true };
const kept: KeyOwner = { organization_id: "org-d", project_id: "proj-kept", environment_id: "env-k", live: true };
const ask: ChatRequest = { model: "simulated-chat", messages: [{ role: "user", content: "Name a prime number." }] };

/** The real store, each put held until `release()`: a write the test can keep in flight. */
class GatedStore implements CacheStore {
  private readonly inner: CacheStore;
  private gate: Promise<void> = Promise.resolve();
  private open: () => void = () => undefined;
  /** Puts that have reached the gate. */
  held = 0;
  /** Deletes take a round trip's time (as on Redis), so a read made meanwhile would still find the entry. */
  slowDeletes = false;

  constructor(inner: CacheStore) {
    this.inner = inner;
  }

  hold(): void {
    this.gate = new Promise((resolve) => (this.open = resolve));
  }

  release(): void {
    this.open();
  }

  async put(key: string, entry: CacheEntry): Promise<number> {
    this.held++;
    await this.gate;
    return this.inner.put(key, entry);
  }

  get(scope: CacheScope, key: string) {
    return this.inner.get(scope, key);
  }
  async delete(scope: CacheScope, key: string) {
    if (this.slowDeletes) await new Promise((resolve) => setTimeout(resolve, 50));
    return this.inner.delete(scope, key);
  }
  clearProject(organizationId: string, projectId: string) {
    return this.inner.clearProject(organizationId, projectId);
  }
  clearOrganization(organizationId: string) {
    return this.inner.clearOrganization(organizationId);
  }
  bytesOf(organizationId: string) {
    return this.inner.bytesOf(organizationId);
  }
  close() {
    return this.inner.close();
  }
}

async function setup(t: Test) {
  const dataDir = await mkdtemp(join(tmpdir(), "troupe-discarded-writes-"));
  const config = loadConfig({ TROUPE_DATA_DIR: dataDir, LOG_LEVEL: "warn" });
  const clock = { now: () => Date.UTC(2030, 5, 6) };
  const providers = createRouter(config.providers);
  let providerCalls = 0;
  const counted = Object.assign(Object.create(providers) as Router, {
    chat: (...a: Parameters<Router["chat"]>) => (providerCalls++, providers.chat(...a)),
  });
  const data = new EmbeddedDataStore(dataDir, clock);
  const store = new GatedStore(new EmbeddedCacheStore(dataDir, { orgQuotaBytes: 10_000_000, maxEntryBytes: 1_000_000 }, clock));
  const settings = new ProjectCacheSettingsStore(data, clock);
  for (const owner of [cleared, kept]) await settings.update(owner.project_id, { enabled: true });
  const cache = new ResponseCache({ store, settings, clock, metrics: new CacheMetrics(), log: createLogger("warn", {}, () => undefined) });
  const router = cachingRouter(counted, cache);
  t.teardown(async () => {
    await data.close();
    await store.close();
    await rm(dataDir, { recursive: true, force: true });
  });
  /** The question asked as `owner`'s request: its troupe-cache outcome. */
  const asked = async (owner: KeyOwner): Promise<string | undefined> => {
    const request: CacheRequest = { owner, payer: { ...owner, api_key_id: "key-d", request_id: "req-d" }, mode: "use", ttlSeconds: undefined, state: new ResponseState(), outcome: undefined };
    await withCacheRequest(request, () => router.chat(ask));
    return request.outcome;
  };
  /** What the store holds under the question's key for `owner`, read directly. */
  const held = (owner: KeyOwner) => store.get(owner, chatCacheKey(owner, ask, undefined));
  /** Until the puts made so far have landed (and anything chained on them ran). */
  const landed = () => new Promise((r) => setTimeout(r, 200));
  return { cache, store, asked, held, landed, calls: () => providerCalls };
}

t.test("a write in flight when the project is cleared is deleted once it lands; another project's stays", async (t) => {
  const { cache, store, asked, held, landed, calls } = await setup(t);
  store.hold();
  t.equal(await asked(cleared), "miss");
  t.equal(await asked(kept), "miss");
  t.equal(store.held, 2, "both writes are in flight");
  t.equal(await store.clearProject(cleared.organization_id, cleared.project_id), 0, "the clear finds nothing stored yet");
  cache.discardWrites(cleared.organization_id, new Set([cleared.project_id]));
  store.release();
  await landed();
  t.equal(await held(cleared), undefined, "the cleared project's write did not outlive the clear");
  t.ok(await held(kept), "the other project's write landed");
  const before = calls();
  t.equal(await asked(cleared), "miss", "the identical question after the clear: a miss");
  t.equal(calls() - before, 1, "answered by the provider");
  t.equal(await asked(kept), "hit");
});

t.test("an identical request waiting on the discarded write is a miss, not the write's answer", async (t) => {
  const { cache, store, asked, held, landed, calls } = await setup(t);
  store.hold();
  store.slowDeletes = true;
  t.equal(await asked(cleared), "miss");
  await store.clearProject(cleared.organization_id, cleared.project_id);
  cache.discardWrites(cleared.organization_id, new Set([cleared.project_id]));
  // Arrives after the clear, while the write is held: it waits for the write and its discard (writing map), then reads.
  const waiting = asked(cleared);
  store.release();
  t.equal(await waiting, "miss", "what the clear discarded is not served to a request that waited for it");
  t.equal(calls(), 2);
  await landed();
  t.ok(await held(cleared), "that miss's own answer, asked after the clear, is stored");
});

t.test("a write in flight when the organization is deleted is deleted once it lands", async (t) => {
  const { cache, store, asked, held, landed } = await setup(t);
  store.hold();
  t.equal(await asked(cleared), "miss");
  t.equal(await asked(kept), "miss");
  await store.clearOrganization(cleared.organization_id);
  cache.discardWrites(cleared.organization_id);
  store.release();
  await landed();
  t.equal(await held(cleared), undefined, "none of the organization's writes landed for good");
  t.equal(await held(kept), undefined, "in any of its projects");
  t.equal(await asked(kept), "miss");
});
