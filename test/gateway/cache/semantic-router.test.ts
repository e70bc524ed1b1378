// The semantic decorator over the exact cache's router and store, with the
// real provider router (simulated models) underneath, in a request's cache
// context as the route runner sets it: a respelled question is served from
// the cache (announced as an exact hit is, plus the semantic headers) with no
// provider call, JSON or stream alike; a question sharing most words is
// answered live; an exact hit pays for no embedding; semantic off embeds
// nothing; a key's model allowlist is never bypassed by a semantic hit.
import t, { type Test } from "tap";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../../../core/log.ts";
import { ResponseState } from "../../../gateway/http-io.ts";
import { loadConfig } from "../../../gateway/config.ts";
import { createRouter } from "../../../providers/index.ts";
import type { ChatRequest } from "../../../providers/chat-request.ts";
import type { Router } from "../../../providers/router.ts";
import { UsageMeter, type UsageRecord } from "../../../providers/usage.ts";
import type { StreamEvent } from "../../../providers/types.ts";
import { EmbeddedDataStore } from "../../../tenancy/embedded-data-store.ts";
import { CacheMetrics } from "../../../gateway/cache/cache-metrics.ts";
import { withCacheRequest, type CacheRequest } from "../../../gateway/cache/cache-request.ts";
import { cachingRouter } from "../../../gateway/cache/caching-router.ts";
import { EmbeddedCacheStore } from "../../../gateway/cache/embedded-cache-store.ts";
import { ProjectCacheSettingsStore } from "../../../gateway/cache/project-cache-settings.ts";
import { ResponseCache } from "../../../gateway/cache/response-cache.ts";
import { SIMULATED_EMBED_THRESHOLD } from "../../../gateway/cache/semantic-defaults.ts";
import { semanticRouter } from "../../../gateway/cache/semantic-router.ts";
import { semanticServices } from "../../../gateway/cache/semantic-services.ts";
import type { CacheMode } from "../../../gateway/cache/types.ts";

const owner = { organization_id: "org-r", project_id: "proj-r", environment_id: "env-r", live: true };

async function setup(t: Test, semantic = true) {
  const dataDir = await mkdtemp(join(tmpdir(), "troupe-semantic-router-"));
  const config = loadConfig({ TROUPE_DATA_DIR: dataDir, LOG_LEVEL: "warn" });
  const clock = { now: () => Date.UTC(2030, 3, 4) };
  const log = createLogger("warn", {}, () => undefined);
  const providers = createRouter(config.providers);
  let providerCalls = 0;
  // Counts what reaches the providers: a cache hit must not.
  const counted = Object.assign(Object.create(providers) as Router, {
    chat: (...a: Parameters<Router["chat"]>) => (providerCalls++, providers.chat(...a)),
    chatStream: (...a: Parameters<Router["chatStream"]>) => (providerCalls++, providers.chatStream(...a)),
  });
  const store = new EmbeddedDataStore(dataDir, clock);
  const cacheStore = new EmbeddedCacheStore(dataDir, { orgQuotaBytes: 10_000_000, maxEntryBytes: 1_000_000 }, clock);
  const settings = new ProjectCacheSettingsStore(store, clock);
  await settings.update(owner.project_id, { enabled: true, semantic_enabled: semantic, semantic_threshold: SIMULATED_EMBED_THRESHOLD });
  const cache = new ResponseCache({ store: cacheStore, settings, clock, metrics: new CacheMetrics(), log });
  const records: UsageRecord[] = [];
  const services = semanticServices({
    config, router: providers, store, cacheStore, clock, log, indexModel: "simulated-embed",
    meter: new UsageMeter(providers.catalogue, { record: (r) => records.push(r) }, clock.now),
    payerOf: (r) => r.payer,
  });
  const router = semanticRouter(cachingRouter(counted, cache), { cache, step: services.step });
  t.teardown(async () => {
    await services.close();
    await store.close();
    await cacheStore.close();
    await rm(dataDir, { recursive: true, force: true });
  });
  const inRequest = async <T>(fn: () => Promise<T>, mode: CacheMode = "use") => {
    const request: CacheRequest = { owner, payer: { ...owner, api_key_id: "key-r", request_id: "req-r" }, mode, ttlSeconds: undefined, state: new ResponseState(), outcome: undefined };
    const value = await withCacheRequest(request, fn);
    return { value, headers: Object.fromEntries(request.state.headers ?? []) };
  };
  const settle = () => new Promise((r) => setTimeout(r, 100));
  return { router, inRequest, settle, records, calls: () => providerCalls };
}

const ask = (text: string): ChatRequest => ({ model: "simulated-chat", messages: [{ role: "system", content: "Be brief." }, { role: "user", content: text }] });
async function text(events: AsyncIterable<StreamEvent>): Promise<string> {
  let out = "";
  for await (const e of events) if ("delta" in e) out += e.delta;
  return out;
}

t.test("a respelled question is a cache hit without a provider call, JSON and stream", async (t) => {
  const { router, inRequest, settle, calls, records } = await setup(t);
  const first = await inRequest(() => router.chat(ask("What is the capital of France?")));
  t.equal(first.headers["troupe-cache"], "miss");
  t.equal(first.headers["troupe-cache-embedding-model"], "simulated-embed");
  t.equal(calls(), 1);
  await settle();

  const again = await inRequest(() => router.chat(ask("what is the capital of france")));
  t.match(again.headers, { "troupe-cache": "hit", "troupe-cache-age": "0", "troupe-cache-match": "semantic", "troupe-cache-similarity": "1.000", "troupe-cache-embedding-model": "simulated-embed" });
  t.equal(again.value.content, first.value.content, "the stored answer");
  t.equal(calls(), 1, "no provider call");

  const streamed = await inRequest(() => text(router.chatStream(ask("What is the capital of France ?!"))));
  t.equal(streamed.headers["troupe-cache-match"], "semantic");
  t.equal(streamed.value, first.value.content, "replayed as a stream");
  t.equal(calls(), 1);
  t.equal(records.filter((r) => r.category === "embeddings").length, 3, "every lookup's embedding billed");

  const other = await inRequest(() => router.chat(ask("What is the capital of Germany?")));
  t.equal(other.headers["troupe-cache"], "miss", "a question sharing most words is answered live");
  t.equal(calls(), 2);
});

t.test("an exact hit embeds nothing; semantic off embeds nothing", async (t) => {
  const { router, inRequest, settle, records } = await setup(t);
  await inRequest(() => router.chat(ask("Who wrote Hamlet?")));
  await settle();
  const exact = await inRequest(() => router.chat(ask("Who wrote Hamlet?")));
  t.equal(exact.headers["troupe-cache"], "hit");
  t.equal(exact.headers["troupe-cache-match"], "exact", "served by the exact cache underneath");
  t.equal(records.length, 1, "only the first request's lookup was embedded");

  const off = await setup(t, false);
  await off.inRequest(() => off.router.chat(ask("Who wrote Hamlet?")));
  await off.settle();
  const miss = await off.inRequest(() => off.router.chat(ask("who wrote hamlet")));
  t.equal(miss.headers["troupe-cache"], "miss");
  t.equal(miss.headers["troupe-cache-embedding-model"], undefined);
  t.equal(off.records.length, 0);
});

t.test("a semantic hit never bypasses the key's model allowlist; bypass skips it", async (t) => {
  const { router, inRequest, settle, calls } = await setup(t);
  await inRequest(() => router.chat(ask("How tall is Everest?")));
  await settle();
  // The stored answer's model is refused to this call, another is allowed: answered live.
  const refused = await inRequest(() => router.chat(ask("how tall is everest"), { allowModel: (m) => m.id !== "simulated-chat" }).catch((e: unknown) => String(e)));
  t.not(refused.headers["troupe-cache"], "hit");
  t.equal(refused.headers["troupe-cache-match"], undefined);
  const before = calls();
  const bypass = await inRequest(() => router.chat(ask("how tall is everest")), "bypass");
  t.equal(bypass.headers["troupe-cache"], "bypass");
  t.equal(calls(), before + 1);
});
