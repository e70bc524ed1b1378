// The key cache records a key's last use (last_used_at) at most once a
// minute per key: it is advisory, and a write per request would put the
// store on every authenticated call's path. A use within the minute leaves
// the recorded time as it was; the first use after it moves it forward.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { isoTime } from "../../core/clock.ts";
import { loadConfig } from "../../gateway/config.ts";
import { createLogger } from "../../core/log.ts";
import { ApiKeyService } from "../../tenancy/api-keys.ts";
import { KeyCache } from "../../tenancy/key-cache.ts";
import { EmbeddedDataStore } from "../../tenancy/embedded-data-store.ts";
import { keys } from "../../tenancy/records.ts";
import type { Environment } from "../../tenancy/types.ts";
import { waitFor } from "../support/net.ts";

t.test("last_used_at is written on first use, not again within a minute, then again after it", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-key-cache-"));
  let nowMs = Date.parse("2026-03-01T10:00:00.000Z");
  const clock = { now: () => nowMs };
  const store = new EmbeddedDataStore(dir, clock);
  t.teardown(() => store.close());
  // The longest revalidation window, so the uses within the minute are cache hits.
  const config = loadConfig({ TROUPE_DATA_DIR: dir, KEY_CACHE_REVALIDATE_MS: "60000" });
  const log = createLogger("silent");
  const env: Environment = { id: "env_1", project_id: "prj_1", organization_id: "org_1", name: "development", production: false, created_at: isoTime(nowMs) };
  const { ops, created } = new ApiKeyService(store, config.tenancy, clock, log).prepareTestKey(env, nowMs);
  await store.apply(ops);
  const cache = new KeyCache(store, config.tenancy, clock, log);
  const recorded = async () => (await store.getMany([keys.apiKeyUsed(created.id)]))[0];
  const settled = async (expected: string) => waitFor(async () => (await recorded()) === expected, 2_000, `last_used_at ${expected}`);

  const first = nowMs;
  await cache.authenticate(created.key);
  await settled(isoTime(first));
  t.equal(await recorded(), isoTime(first), "the first use is recorded");

  for (const step of [1_000, 20_000, 38_999]) {
    nowMs += step;
    await cache.authenticate(created.key);
  }
  // 59.999 s after the first write: a write would land within this wait.
  await new Promise((resolve) => setTimeout(resolve, 200));
  t.equal(await recorded(), isoTime(first), "uses within the minute leave it unchanged");

  nowMs = first + 60_000;
  await cache.authenticate(created.key);
  await settled(isoTime(nowMs));
  t.equal(await recorded(), isoTime(first + 60_000), "the first use a minute later moves it forward");
});
