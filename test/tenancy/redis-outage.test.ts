// A short Redis outage delays the data store's commands instead of failing
// them (tenancy/redis-data-store.ts: queued while ioredis reconnects every
// 250 ms, up to 40 attempts): the store reaches Redis through a proxy the
// test cuts (every connection reset, connects refused) and restores.
import t from "tap";
import { RedisDataStore } from "../../tenancy/redis-data-store.ts";
import { CuttableProxy } from "../support/cuttable-proxy.ts";
import { freePort } from "../support/net.ts";
import { startTestRedis } from "../support/redis.ts";

const redis = await startTestRedis();
const target = new URL(redis.url);
const proxy = await CuttableProxy.start(await freePort(), { host: target.hostname, port: Number(target.port) });
const store = new RedisDataStore(`redis://127.0.0.1:${proxy.listenPort}`, `test:outage:${process.pid}:${Date.now()}:`);
t.teardown(async () => {
  await store.close();
  // Let QUIT's reply pass the proxy before it resets everything (else a socket lingers and the file never exits).
  await new Promise((r) => setTimeout(r, 300));
  await proxy.stop();
  await redis.stop();
});

t.test("commands issued during a 2 s cut complete once Redis is back", async (t) => {
  await store.apply([{ op: "put", key: "before", value: { n: 1 } }]);
  await proxy.cut();
  const cutAt = Date.now();
  const read = store.get("before");
  const counted = store.hit("outage-counter", 60_000);
  await new Promise((r) => setTimeout(r, 2_000));
  await proxy.restore();
  t.same(await read, { n: 1 }, "the read issued during the cut answers after it");
  t.equal((await counted).count, 1, "the counter issued during the cut counted once");
  t.ok(Date.now() - cutAt >= 2_000, "it waited for Redis rather than failing");
});
