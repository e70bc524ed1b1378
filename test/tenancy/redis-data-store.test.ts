import t from "tap";
import { Redis } from "ioredis";
import { RedisDataStore } from "../../tenancy/redis-data-store.ts";
import { prefixedStores } from "../support/prefixed-stores.ts";
import { startTestRedis } from "../support/redis.ts";
import { storeSuite } from "./data-store-suite.ts";

const redis = await startTestRedis();
t.teardown(() => redis.stop());

storeSuite(t, { name: "redis", ...prefixedStores((prefix) => new RedisDataStore(redis.url, prefix)) });

t.test("redis: the last handler's unsubscribe leaves the channel on the server too", async (t) => {
  const prefix = `unsub-${Date.now()}:`;
  const store = new RedisDataStore(redis.url, prefix);
  const admin = new Redis(redis.url);
  t.teardown(async () => {
    await store.close();
    admin.disconnect();
  });
  const channel = "per-resource";
  const subscribers = async (): Promise<number> => {
    const reply = await admin.pubsub("NUMSUB", `${prefix}${channel}`);
    return Number(reply[1]);
  };
  const first = (): void => undefined;
  const second = (): void => undefined;
  await store.subscribe(channel, first);
  await store.subscribe(channel, second);
  t.equal(await subscribers(), 1, "one subscription on the server for the process");
  await store.unsubscribe(channel, first);
  t.equal(await subscribers(), 1, "kept while a handler remains");
  await store.unsubscribe(channel, second);
  t.equal(await subscribers(), 0, "gone with the last handler: this process no longer receives the channel");
});
