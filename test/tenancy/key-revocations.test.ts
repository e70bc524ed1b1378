// The registry of connections per API key, and the revocation broadcast's
// handling of what arrives on the channel.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { systemClock } from "../../core/clock.ts";
import { loadConfig } from "../../gateway/config.ts";
import { createLogger } from "../../core/log.ts";
import { ApiKeyService } from "../../tenancy/api-keys.ts";
import { EmbeddedDataStore } from "../../tenancy/embedded-data-store.ts";
import { KeyRevocations } from "../../tenancy/key-revocations.ts";

t.test("closers run once per revocation, only for their key, and unwatch removes them", async (t) => {
  const registry = new KeyRevocations();
  const closed: string[] = [];
  const unwatchA1 = registry.watch("key_a", () => closed.push("a1"));
  registry.watch("key_a", () => closed.push("a2"));
  const unwatchB = registry.watch("key_b", () => closed.push("b"));
  t.equal(registry.size, 3);
  unwatchA1();
  unwatchA1();
  t.equal(registry.revoked("key_a"), 1);
  t.same(closed, ["a2"]);
  t.equal(registry.revoked("key_a"), 0, "a second revocation finds nothing");
  unwatchB();
  t.equal(registry.size, 0);
  t.equal(registry.revoked("key_b"), 0);
});

t.test("a broadcast closes the key's connections; a malformed one is ignored", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-revocations-"));
  const store = new EmbeddedDataStore(dir, systemClock);
  const config = loadConfig({ TROUPE_DATA_DIR: dir });
  const service = new ApiKeyService(store, config.tenancy, systemClock, createLogger("silent"));
  await service.start();
  t.teardown(() => store.close());
  let closes = 0;
  service.revocations.watch("key_x", () => (closes += 1));
  await store.publish("api-keys:revoked", "not json");
  await store.publish("api-keys:revoked", JSON.stringify({ key_id: 42 }));
  t.equal(closes, 0, "garbage on the channel closes nothing and throws nothing");
  await store.publish("api-keys:revoked", JSON.stringify({ key_id: "key_x", key_hash: "h" }));
  t.equal(closes, 1);
});
